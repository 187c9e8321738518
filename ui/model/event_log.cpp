#include "ui/model/event_log.hpp"

#include <algorithm>

namespace ksim::ui {

EventLog::EventLog() { texts_.emplace_back(); }

uint32_t EventLog::intern(const Event& e) {
  if (e.text.empty()) return 0;
  if (e.kind == EventKind::console || e.kind == EventKind::exit) {
    texts_.push_back(e.text);
    return static_cast<uint32_t>(texts_.size() - 1);
  }
  // Probe state names and trap notes come from a small vocabulary.
  auto [it, fresh] = interned_.try_emplace(e.text, static_cast<uint32_t>(texts_.size()));
  if (fresh) texts_.push_back(e.text);
  return it->second;
}

void EventLog::append(const Event& e) {
  EventRec r;
  r.cycle = e.cycle;
  r.a = e.a;
  r.b = e.b;
  r.c = e.c;
  r.cpu = static_cast<int16_t>(e.cpu);
  r.kind = e.kind;
  r.sub = e.sub;
  r.text = intern(e);
  by_kind_[static_cast<int>(e.kind)].push_back(static_cast<uint32_t>(recs_.size()));
  recs_.push_back(r);
}

void EventLog::on_event(const Event& e) {
  if (e.kind == EventKind::insn) return;
  if (cursor_ < recs_.size()) {
    const EventRec& r = recs_[cursor_];
    const bool same = r.cycle == e.cycle && r.cpu == e.cpu && r.kind == e.kind && r.a == e.a && r.b == e.b &&
                      r.c == e.c && texts_[r.text] == e.text;
    if (same) {
      ++cursor_;
      return;
    }
    ++mismatches_;  // should never happen; keep what this run says
    truncate(cursor_, lines_.size());
  }
  append(e);
  cursor_ = recs_.size();
}

void EventLog::add_line(uint64_t cycle, int cpu, const std::string& text) {
  if (line_cursor_ < lines_.size()) {
    if (lines_[line_cursor_].text == text && lines_[line_cursor_].cpu == cpu) {
      ++line_cursor_;
      return;
    }
    ++mismatches_;
    lines_.resize(line_cursor_);
    ++generation_;
  }
  lines_.push_back(ProbeLine{cycle, cpu, text});
  line_cursor_ = lines_.size();
}

void EventLog::rewind(size_t delivered, size_t lines) {
  cursor_ = std::min(delivered, recs_.size());
  line_cursor_ = std::min(lines, lines_.size());
}

void EventLog::truncate(size_t events, size_t lines) {
  if (events < recs_.size()) {
    recs_.resize(events);
    for (auto& v : by_kind_)
      while (!v.empty() && v.back() >= events) v.pop_back();
    ++generation_;
  }
  if (lines < lines_.size()) {
    lines_.resize(lines);
    ++generation_;
  }
  cursor_ = std::min(cursor_, recs_.size());
  line_cursor_ = std::min(line_cursor_, lines_.size());
}

size_t EventLog::first_at_or_after(EventKind k, uint64_t c) const {
  const auto& v = of_kind(k);
  auto it = std::lower_bound(v.begin(), v.end(), c, [&](uint32_t i, uint64_t cyc) { return recs_[i].cycle < cyc; });
  return it == v.end() ? recs_.size() : *it;
}

size_t EventLog::last_before(EventKind k, uint64_t c) const {
  const auto& v = of_kind(k);
  auto it = std::lower_bound(v.begin(), v.end(), c, [&](uint32_t i, uint64_t cyc) { return recs_[i].cycle < cyc; });
  return it == v.begin() ? npos : *std::prev(it);
}

size_t EventLog::memory_bytes() const {
  size_t n = recs_.capacity() * sizeof(EventRec) + lines_.capacity() * sizeof(ProbeLine);
  for (const auto& v : by_kind_) n += v.capacity() * sizeof(uint32_t);
  for (const auto& s : texts_) n += sizeof(std::string) + (s.size() > 15 ? s.capacity() : 0);
  for (const auto& l : lines_) n += l.text.size() > 15 ? l.text.capacity() : 0;
  return n;
}

}  // namespace ksim::ui

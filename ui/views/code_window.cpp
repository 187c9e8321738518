// Code: disassembly around the selected CPU's PC, or a symbol or address
// typed in; probes, breakpoints over the original, slots.
#include <algorithm>
#include <cinttypes>

#include <imgui_internal.h>

#include "cpu/hex.hpp"
#include "ui/model/code_view.hpp"
#include "ui/model/source_view.hpp"
#include "ui/views/view_state.hpp"

namespace ksim::ui {

namespace {

// Where each column starts, from the widest text it holds: the rows are
// laid out by hand (not an ImGui table) so that a C line can run from the
// bytes column to the right edge, as objdump -S prints it.
struct Columns {
  float addr = 0, bytes = 0, insn = 0;
};

Columns measure(const std::vector<CodeLine>& lines) {
  const float gap = ImGui::GetStyle().ItemSpacing.x * 2;
  float cpus = ImGui::CalcTextSize("0>").x, addr = 0, bytes = 0;
  for (const CodeLine& l : lines) {
    std::string c;
    for (int k : l.cpus) c += (c.empty() ? "" : ",") + std::to_string(k);
    cpus = std::max(cpus, ImGui::CalcTextSize((c + ">").c_str()).x);
    addr = std::max(addr, ImGui::CalcTextSize(("* " + hex(l.addr, false)).c_str()).x);
    bytes = std::max(bytes, ImGui::CalcTextSize(l.bytes.c_str()).x);
  }
  Columns col;
  col.addr = cpus + gap;
  col.bytes = col.addr + addr + gap;
  col.insn = col.bytes + bytes + gap;
  return col;
}

// Text that explains an instruction: after it on its row while it fits in
// sight, else on the rows below, indented under the instruction and
// wrapped at the window's edge, so none of it is cut off (`first`: the
// row's first text, in the instruction column already).
void trailing(ViewState& s, float x_insn, ImVec4 colour, const std::string& text, bool first = false) {
  const float right = ImGui::GetCurrentWindow()->ClipRect.Max.x;
  const float gap = ImGui::GetStyle().ItemSpacing.x * 2;
  const float w = ImGui::CalcTextSize(text.c_str()).x;
  if (!first) {
    if (ImGui::GetItemRectMax().x + gap + w <= right) {
      ImGui::SameLine(0, gap);
    } else {
      ImGui::SetCursorPosX(ImGui::GetCursorPosX() + x_insn + px(16));  // from the start of the new row
    }
  }
  ImGui::PushTextWrapPos(right - ImGui::GetWindowPos().x + ImGui::GetScrollX());
  ImGui::PushStyleColor(ImGuiCol_Text, colour);
  ImGui::TextWrapped("%s", text.c_str());
  ImGui::PopStyleColor();
  ImGui::PopTextWrapPos();
  s.audit(text);
}

void draw_disassembly(ViewState& s) {
  if (s.code_cache_addr != s.code_addr || s.code_cache_moves != s.d.moves() || s.code_cache_cpu != s.selected_cpu) {
    s.code_cache = code_lines(s.d, s.code_addr, 10, 30, s.selected_cpu);
    s.code_cache_addr = s.code_addr;
    s.code_cache_cpu = s.selected_cpu;
    s.code_cache_moves = s.d.moves();
  }
  const std::vector<CodeLine>& lines = s.code_cache;
  ImGui::BeginChild("listing", ImVec2(0, 0), false, ImGuiWindowFlags_HorizontalScrollbar);
  const Columns col = measure(lines);
  const float x0 = ImGui::GetCursorPosX();
  auto at = [&](float x) {
    ImGui::SameLine();
    ImGui::SetCursorPosX(x0 + x);
  };
  const ImVec4 source_col(0.45f, 0.8f, 0.45f, 1);
  for (const CodeLine& l : lines) {
    if (!l.label.empty()) {
      ImGui::SetCursorPosX(x0 + col.addr);
      ImGui::TextColored(ImVec4(0.6f, 0.8f, 1, 1), "<%s>:", l.label.c_str());
    }
    for (const CodeLine::SourceRow& r : l.source) {
      ImGui::SetCursorPosX(x0 + col.addr);
      ImGui::TextColored(source_col, "%*u", 6, r.line);
      if (ImGui::IsItemHovered()) ImGui::SetTooltip("%s:%u", l.source_file.c_str(), r.line);
      at(col.bytes);
      // Without the file, where the line is.
      if (r.text.empty())
        ImGui::TextColored(source_col, "%s:%u", l.source_file.c_str(), r.line);
      else
        ImGui::TextColored(source_col, "%s", r.text.c_str());
    }
    if (l.addr == s.code_addr) {  // the row in question: a band across the listing
      const ImVec2 p = ImGui::GetCursorScreenPos();
      ImGui::GetWindowDrawList()->AddRectFilled(
          p, ImVec2(p.x + ImGui::GetWindowWidth() + ImGui::GetScrollX(), p.y + ImGui::GetTextLineHeight()),
          IM_COL32(60, 60, 110, 255));
    }
    std::string cpus;
    for (int c : l.cpus) cpus += (cpus.empty() ? "" : ",") + std::to_string(c);
    if (!cpus.empty())
      ImGui::TextColored(ImVec4(1, 0.9f, 0.3f, 1), "%s>", cpus.c_str());
    else
      ImGui::TextUnformatted("");
    at(col.addr);
    if (l.probed)
      ImGui::TextColored(ImVec4(1, 0.45f, 0.3f, 1), "* %" PRIx64, l.addr);
    else
      ImGui::Text("  %" PRIx64, l.addr);
    at(col.bytes);
    ImGui::TextDisabled("%s", l.bytes.c_str());
    at(col.insn);
    if (l.breakpoint && !l.over.empty()) {
      trailing(s, col.insn, ImVec4(1, 0.35f, 0.3f, 1), "[" + l.over + "]", true);
      trailing(s, col.insn, ImVec4(0.75f, 0.75f, 0.75f, 1), "over  " + l.text);
    } else {
      ImGui::TextUnformatted(l.text.c_str());
    }
    if (!l.probes.empty())
      trailing(s, col.insn, ImVec4(1, 0.6f, 0.3f, 1),
               "; probe " + l.probes + (l.breakpoint ? "" : " (disarmed)"));
    if (!l.slot_of.empty()) trailing(s, col.insn, ImVec4(0.4f, 0.85f, 1, 1), "; " + l.slot_of);
    if (s.race_violated && s.race_pc == l.addr && !s.race_mark.empty())  // the race's offending instruction
      trailing(s, col.insn, ImVec4(1, 0.3f, 0.3f, 1), "<- violation: " + s.race_mark);
    if (!l.cpu_sees.empty())  // relaxed code model: this CPU has not seen the store yet
      trailing(s, col.insn, ImVec4(1, 0.55f, 0.85f, 1),
               "; CPU " + std::to_string(s.selected_cpu) + " still sees: " + l.cpu_sees);
  }
  ImGui::EndChild();
}

// The selected CPU's C file, whole: its line marked and scrolled to, every
// CPU's line tagged with its number.
void draw_source(ViewState& s) {
  if (s.source_moves != s.d.moves() || s.source_cpu != s.selected_cpu) {
    s.source = source_view(s.d, s.selected_cpu);
    s.source_moves = s.d.moves();
    s.source_cpu = s.selected_cpu;
  }
  const SourceView& v = s.source;
  ImGui::TextColored(ImVec4(1, 0.9f, 0.3f, 1), "CPU %d", s.selected_cpu);
  ImGui::SameLine();
  ImGui::TextUnformatted(v.where.c_str());
  if (!v.missing.empty()) {
    ImGui::TextDisabled("%s", v.missing.c_str());
    return;
  }
  ImGui::BeginChild("text", ImVec2(0, 0), false, ImGuiWindowFlags_HorizontalScrollbar);
  const float h = ImGui::GetTextLineHeightWithSpacing();
  const std::string here = v.file + ":" + std::to_string(v.current);
  if (here != s.source_scrolled) {  // a new line: bring it to the middle
    ImGui::SetScrollY(std::max(0.0f, (static_cast<float>(v.current) - 1) * h - ImGui::GetWindowHeight() * 0.4f));
    s.source_scrolled = here;
  }
  ImGuiListClipper clip;
  clip.Begin(static_cast<int>(v.lines.size()), h);
  while (clip.Step())
    for (int i = clip.DisplayStart; i < clip.DisplayEnd; ++i) {
      const SourceViewLine& l = v.lines[static_cast<size_t>(i)];
      const bool cur = l.line == v.current;
      if (cur) {
        const ImVec2 p = ImGui::GetCursorScreenPos();
        ImGui::GetWindowDrawList()->AddRectFilled(
            p, ImVec2(p.x + ImGui::GetWindowWidth() + ImGui::GetScrollX(), p.y + h), IM_COL32(60, 60, 110, 255));
      }
      std::string cpus;
      for (int c : l.cpus) cpus += (cpus.empty() ? "" : ",") + std::to_string(c);
      if (!cpus.empty()) cpus += ">";
      ImGui::TextColored(ImVec4(1, 0.9f, 0.3f, 1), "%5s", cpus.c_str());
      ImGui::SameLine();
      ImGui::TextDisabled("%5u", l.line);
      ImGui::SameLine();
      ImGui::TextUnformatted(l.text.c_str());
    }
  ImGui::EndChild();
}

}  // namespace

void draw_code(ViewState& s) {
  if (!s.begin("Code")) return s.end();
  Machine& m = s.d.world().machine();
  ImGui::SetNextItemWidth(px(200));
  if (input_text(s, "location", s.code_text, sizeof s.code_text)) {
    if (auto a = resolve_location(s.d, s.code_text)) {
      s.code_addr = *a;
      s.code_follow_pc = false;
      s.code_message.clear();
    } else {
      s.code_message = std::string("unknown symbol or address '") + s.code_text + "'";
    }
  }
  flow(ImGui::CalcTextSize("follow PC").x + ImGui::GetFrameHeight() + ImGui::GetStyle().ItemInnerSpacing.x);
  ImGui::Checkbox("follow PC", &s.code_follow_pc);
  s.note("follow PC");
  if (!s.code_message.empty()) wrapped(s, ImVec4(1, 0.5f, 0.4f, 1), s.code_message);
  if (s.code_follow_pc) s.code_addr = m.cpu(s.selected_cpu).pc();

  if (ImGui::BeginTabBar("views")) {
    const bool dis = ImGui::BeginTabItem("Disassembly");
    s.note("Disassembly");
    if (dis) {
      draw_disassembly(s);
      ImGui::EndTabItem();
    }
    const bool src = ImGui::BeginTabItem("Source");
    s.note("Source");
    if (src) {
      draw_source(s);
      ImGui::EndTabItem();
    }
    ImGui::EndTabBar();
  }
  s.end();
}

}  // namespace ksim::ui

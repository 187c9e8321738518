#include <cinttypes>
#include <cstdio>

#include "ui/views/view_state.hpp"

namespace ksim::ui {

bool ViewState::begin(const char* name, ImVec2 pos, ImVec2 size) {
  window = name;
  ImGui::SetNextWindowPos(pos, ImGuiCond_FirstUseEver);
  ImGui::SetNextWindowSize(size, ImGuiCond_FirstUseEver);
  return ImGui::Begin(name);
}

void ViewState::end() {
  ImGui::End();
  window.clear();
}

bool button(ViewState& s, const char* label) {
  const bool r = ImGui::Button(label);
  s.note(label);
  return r;
}

bool input_text(ViewState& s, const char* label, char* buf, size_t size) {
  const bool r = ImGui::InputText(label, buf, size, ImGuiInputTextFlags_EnterReturnsTrue);
  s.note(label);
  return r;
}

void hex_u64(char* out, size_t n, uint64_t v) { std::snprintf(out, n, "%" PRIx64, v); }

ImU32 span_colour(SpanKind k) {
  switch (k) {
    case SpanKind::running: return IM_COL32(70, 140, 90, 255);
    case SpanKind::idle: return IM_COL32(70, 70, 80, 255);
    case SpanKind::trap: return IM_COL32(230, 200, 60, 255);
    case SpanKind::hit_active: return IM_COL32(240, 130, 40, 255);
    case SpanKind::hit_ss: return IM_COL32(220, 60, 60, 255);
    case SpanKind::hit_ssdone: return IM_COL32(180, 80, 220, 255);
    case SpanKind::reenter: return IM_COL32(60, 160, 240, 255);
    case SpanKind::patching: return IM_COL32(40, 200, 200, 255);
    case SpanKind::stopper: return IM_COL32(150, 150, 255, 255);
    case SpanKind::count: break;
  }
  return IM_COL32(255, 255, 255, 255);
}

ImVec4 age_colour(uint32_t age, bool code) {
  if (age == MemoryView::kNever || age > 8) return ImGui::GetStyleColorVec4(ImGuiCol_Text);
  const float fade = 1.0f - static_cast<float>(age) / 10.0f;
  if (code) return ImVec4(0.3f + 0.2f * (1 - fade), 0.8f * fade + 0.2f, 1.0f, 1.0f);  // code writes: cyan
  return ImVec4(1.0f, 0.35f + 0.5f * (1 - fade), 0.25f + 0.5f * (1 - fade), 1.0f);  // data writes: red, fading
}

}  // namespace ksim::ui

#include <cinttypes>
#include <cstdio>

#include "ui/views/view_state.hpp"

#include <imgui_internal.h>

namespace ksim::ui {

bool ViewState::begin(const char* name) {
  window = name;
  began = false;
  const auto place = layout ? place_of(*layout, name) : std::nullopt;
  if (!place) return false;
  const ImVec2 ds = ImGui::GetIO().DisplaySize;
  const ImGuiCond cond = layout_pending ? ImGuiCond_Always : ImGuiCond_FirstUseEver;
  ImGui::SetNextWindowPos(ImVec2(place->x * ds.x, place->y * ds.y), cond);
  ImGui::SetNextWindowSize(ImVec2(place->w * ds.x, place->h * ds.y), cond);
  began = true;
  return ImGui::Begin(name);
}

void ViewState::end() {
  if (began) ImGui::End();
  began = false;
  window.clear();
}

void ViewState::audit(const std::string& what) {
  const ImRect clip = ImGui::GetCurrentWindow()->ClipRect;
  const ImVec2 lo = ImGui::GetItemRectMin(), hi = ImGui::GetItemRectMax();
  // Items scrolled out of sight vertically are fine (a list); sideways, the
  // text must fit. A selectable reaches half an item spacing past its text
  // on both sides (ImGui's hit box), plus half a pixel for rounding.
  if (hi.y < clip.Min.y || lo.y > clip.Max.y) return;
  const float slack = ImGui::GetStyle().ItemSpacing.x * 0.5f + 0.5f;
  if (hi.x > clip.Max.x + slack || lo.x < clip.Min.x - slack) clipped[window + "/" + what] = what;
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

void flow(float width) {
  const float right = ImGui::GetWindowPos().x + ImGui::GetWindowContentRegionMax().x;
  if (ImGui::GetItemRectMax().x + ImGui::GetStyle().ItemSpacing.x + width <= right) ImGui::SameLine();
}

void flow(const char* label) {
  flow(ImGui::CalcTextSize(label, nullptr, true).x + ImGui::GetStyle().FramePadding.x * 2);
}

void wrapped(ViewState& s, ImVec4 colour, const std::string& text) {
  ImGui::PushTextWrapPos(0.0f);
  ImGui::PushStyleColor(ImGuiCol_Text, colour);
  ImGui::TextWrapped("%s", text.c_str());
  ImGui::PopStyleColor();
  ImGui::PopTextWrapPos();
  s.audit(text);
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

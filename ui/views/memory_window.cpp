// Memory: hex and ASCII, recent changes coloured by age (red, fading),
// changes to code in cyan.
#include <cinttypes>

#include "ui/model/code_view.hpp"
#include "ui/model/cpu_view.hpp"
#include "ui/views/view_state.hpp"

namespace ksim::ui {

void draw_memory(ViewState& s) {
  if (!s.begin("Memory")) return s.end();
  ImGui::SetNextItemWidth(px(200));
  if (input_text(s, "address", s.mem_text, sizeof s.mem_text)) {
    if (auto a = resolve_location(s.d, s.mem_text)) {
      s.memory.set_range(*a & ~uint64_t{15}, 256);
      s.mem_follow_sp = false;
      s.mem_message.clear();
    } else {
      s.mem_message = std::string("unknown symbol or address '") + s.mem_text + "'";
    }
  }
  if (s.mem_follow_sp) {  // until an address is typed in: the selected CPU's stack
    const Cpu& c = s.d.world().machine().cpu(s.selected_cpu);
    const uint64_t sp = c.gpr(c.isa() == Isa::rv64 ? 2 : 4);
    // Moved only when the stack pointer leaves it, so changes stay visible.
    // The frame lives just above the stack pointer: keep sp near the top.
    if (s.memory.size() == 0 || sp < s.memory.addr() + 16 || sp >= s.memory.addr() + 96)
      s.memory.set_range((sp & ~uint64_t{15}) - 16, 256);
  }
  s.memory.refresh(s.d);
  flow(ImGui::CalcTextSize("data").x);
  ImGui::TextColored(age_colour(0, false), "data");
  flow(ImGui::CalcTextSize("code").x);
  ImGui::TextColored(age_colour(0, true), "code");
  flow(ImGui::CalcTextSize("changed by the last stops").x);
  ImGui::TextDisabled("changed by the last stops");
  if (!s.mem_message.empty()) wrapped(s, ImVec4(1, 0.5f, 0.4f, 1), s.mem_message);
  // Timing v2: who caches the first line shown, and in which state.
  if (const std::string holders = line_holders(s.d, s.memory.addr()); !holders.empty())
    wrapped(s, ImVec4(0.6f, 0.8f, 1.0f, 1), holders);
  ImGui::BeginChild("hex", ImVec2(0, 0), false, ImGuiWindowFlags_HorizontalScrollbar);
  // 16 bytes a row when they fit with their ASCII, else 8.
  const float need16 = ImGui::CalcTextSize("0000000000000000  00 00 00 00 00 00 00 00  00 00 00 00 00 00 00 00  0123456789abcdef").x;
  const size_t per_row = ImGui::GetContentRegionAvail().x >= need16 + 30 ? 16 : 8;
  const auto& bytes = s.memory.bytes();
  for (size_t row = 0; row * per_row < bytes.size(); ++row) {
    ImGui::Text("%016" PRIx64, s.memory.addr() + row * per_row);
    for (size_t i = row * per_row; i < (row + 1) * per_row && i < bytes.size(); ++i) {
      ImGui::SameLine(0, i % 8 == 0 ? 10.0f : 5.0f);
      const auto& b = bytes[i];
      if (!b.valid)
        ImGui::TextDisabled("??");
      else
        ImGui::TextColored(age_colour(b.age, b.code), "%02x", b.value);
    }
    ImGui::SameLine(0, 10);
    char ascii[17] = {};
    for (size_t i = 0; i < per_row && row * per_row + i < bytes.size(); ++i) {
      const auto& b = bytes[row * per_row + i];
      ascii[i] = b.valid && b.value >= 32 && b.value < 127 ? static_cast<char>(b.value) : '.';
    }
    ImGui::TextUnformatted(ascii);
  }
  ImGui::EndChild();
  s.end();
}

}  // namespace ksim::ui

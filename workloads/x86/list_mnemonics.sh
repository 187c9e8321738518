#!/usr/bin/env bash
# Lists the instructions in x86 guest ELFs, for the x86 core: every distinct
# mnemonic (Intel syntax, as Zydis and `ksim disasm --isa x86` print them,
# prefixes such as rep included), how many ELFs use it and how often it
# occurs statically; then every operand form (r64, m32, imm, rel, ...) and
# every addressing mode of a memory operand.
#
#   workloads/x86/list_mnemonics.sh ELF...            # to stdout
#   workloads/x86/list_mnemonics.sh $(cat build/workloads/x86/guests.txt)
#
# Static counts (instructions in the files), not executed ones. Alignment
# padding between functions (nop forms, `data16 cs nopw`) is included:
# some of it sits inside functions before loop heads and does execute.
set -euo pipefail
OBJDUMP=${OBJDUMP:-objdump}
if [ $# -eq 0 ]; then
  echo "usage: $0 ELF..." >&2
  exit 2
fi

for elf in "$@"; do
  "$OBJDUMP" -d --no-show-raw-insn -M intel "$elf" | awk -v elf="$(basename "$elf")" -F'\t' '
    NF >= 2 && $1 ~ /^ *[0-9a-f]+:$/ {
      insn = $2
      sub(/ *#.*$/, "", insn)          # objdump comments (symbol of a rip target)
      gsub(/  +/, " ", insn)
      sub(/ +$/, "", insn)
      print elf "\t" insn
    }'
done | awk -F'\t' '
  function opclass(op) {
    if (op ~ /^(BYTE|WORD|DWORD|QWORD|TBYTE|XMMWORD) PTR/) {
      sz = op; sub(/ PTR.*/, "", sz)
      return (sz == "BYTE" ? "m8" : sz == "WORD" ? "m16" : sz == "DWORD" ? "m32" : sz == "QWORD" ? "m64" : "m?")
    }
    if (op ~ /^\[/ || op ~ /^[a-z][a-z]:\[/) return "m"
    if (op ~ /^(r[0-9]+|r[a-ds][xip]|r[sd]i|rbp|rsp)$/) return "r64"
    if (op ~ /^(r[0-9]+d|e[a-ds][xip]|e[sd]i|ebp|esp)$/) return "r32"
    if (op ~ /^(r[0-9]+w|[a-d]x|[sd]i|bp|sp)$/) return "r16"
    if (op ~ /^(r[0-9]+b|[a-d]l|[a-d]h|[sd]il|bpl|spl)$/) return "r8"
    if (op ~ /^[cdefgs]s$/) return "sreg"
    if (op ~ /^(0x)?[0-9a-f]+ <.*>$/ || op ~ /^[0-9a-f]+$/ && is_branch) return "rel"
    if (op ~ /^-?(0x)?[0-9a-f]+$/) return "imm"
    return op
  }
  {
    elf = $1; insn = $2
    # Split "prefixes mnemonic operands": prefixes are words that objdump
    # prints in front of the mnemonic.
    n = split(insn, w, " ")
    m = ""; i = 1
    while (i <= n && w[i] ~ /^(rep|repz|repe|repnz|repne|lock|data16|cs|ds|es|ss|notrack|bnd|addr32)$/) {
      m = m w[i] " "; i++
    }
    if (i <= n) { m = m w[i]; i++ }
    ops = ""
    for (; i <= n; i++) ops = ops (ops == "" ? "" : " ") w[i]
    sub(/ $/, "", m)
    is_branch = (m ~ /^(j[a-z]+|call|jmp)$/)
    form = m
    if (ops != "") {
      # Commas inside [...] do not occur in Intel syntax; split on commas.
      k = split(ops, o, ",")
      sep = " "
      for (j = 1; j <= k; j++) { form = form sep opclass(o[j]); sep = ", " }
    }
    count[m]++
    if (!((m SUBSEP elf) in seen)) { seen[m, elf] = 1; elfs[m]++ }
    fcount[form]++
    # Addressing mode of each memory operand.
    for (j = 1; j <= k && ops != ""; j++) {
      op = o[j]
      if (op ~ /\[/) {
        e = op; sub(/^[^[]*\[/, "", e); sub(/\].*$/, "", e)
        seg = (op ~ /[cdefgs]s:\[/) ? substr(op, index(op, ":") - 2, 3) : ""
        if (e ~ /^rip/) mode = "[rip+disp32]"
        else {
          has_base = (e ~ /^r[a-z0-9]+(\+|-|$)/ && e !~ /^r[a-z0-9]+\*/) || (e ~ /^e[a-z]+(\+|-|$)/)
          has_index = (e ~ /\*[1248]/)
          has_disp = (e ~ /(\+|-)0x[0-9a-f]+$/ || e ~ /^0x/)
          mode = "[" (has_base ? "base" : "") (has_index ? (has_base ? "+" : "") "index*s" : "") \
                 (has_disp ? ((has_base || has_index) ? "+" : "") "disp" : "") "]"
        }
        acount[seg mode]++
      } else if (op ~ /^[cdefgs]s:0x[0-9a-f]+$/) {
        acount["[disp32] (absolute, " substr(op, 1, 3) ")"]++
      }
    }
  }
  END {
    print "# mnemonic  ELFs  static-count"
    for (m in count) printf "%s\t%d\t%d\n", m, elfs[m], count[m] | "sort"
    close("sort")
    print ""
    print "# operand forms (rN register, mN memory of N bits, m address only, imm, rel)"
    for (f in fcount) printf "%s\t%d\n", f, fcount[f] | "sort"
    close("sort")
    print ""
    print "# addressing modes of memory operands (lea included)"
    for (a in acount) printf "%s\t%d\n", a, acount[a] | "sort"
    close("sort")
  }'

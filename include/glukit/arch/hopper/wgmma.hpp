// wgmma (sm_90a): warpgroup matrix multiply-accumulate with both operands in
// shared memory, fp16, bf16 or e4m3 inputs, fp32 accumulators in registers.
//   A: K-major (row-major M x K), 128-byte swizzle, tnspA = 0
//   B: MN-major (row-major K x N), tnspB = 1; or K-major (B stored N x K, an
//      nn.Linear weight), tnspB = 0 -- both 128-byte swizzled
//   e4m3 (m64nNk32): both operands K-major (the instruction has no transpose). One k32
//      step spans the 32 bytes of a k16 step of 16-bit operands, so a 128-byte swizzled
//      row holds 128 e4m3 values and the descriptors advance as for 16-bit ones.
// Accumulator fragment of m64nNk16 (and m64nNk32) for thread t of the warpgroup
// (warp w = t / 32, lane l):  d[4j + 2h + e] -> (row 16w + l/4 + 8h, col 8j + 2(l%4) + e)
// Generated for N in {64, 128, 192, 256}; the asm lists every accumulator.
#pragma once
#include <cstdint>
#include <type_traits>

#include "glukit/platform/config.hpp"
#include "glukit/platform/element.hpp"
#include "glukit/platform/fp8.hpp"

namespace glukit::arch::hopper {

/// Shared-memory matrix descriptor for a 128-byte-swizzled operand at shared-window
/// address `addr` (smem_u32). lbo/sbo in bytes: K-major: sbo = 8 rows x 128 B = 1024 (lbo
/// unused); MN-major: lbo = bytes between 64-element MN panels, sbo = 1024 (8 K rows).
GLUKIT_DEVICE constexpr std::uint64_t smem_desc_sw128_at(std::uint32_t addr, std::uint32_t lbo, std::uint32_t sbo) {
  std::uint64_t desc = (addr & 0x3FFFFu) >> 4;
  desc |= static_cast<std::uint64_t>((lbo >> 4) & 0x3FFFu) << 16;
  desc |= static_cast<std::uint64_t>((sbo >> 4) & 0x3FFFu) << 32;
  desc |= std::uint64_t{1} << 62;  // layout type 1: SWIZZLE_128B
  return desc;
}
/// The same descriptor from a generic pointer into shared memory.
GLUKIT_DEVICE inline std::uint64_t smem_desc_sw128(const void* smem, std::uint32_t lbo, std::uint32_t sbo) {
  return smem_desc_sw128_at(static_cast<std::uint32_t>(__cvta_generic_to_shared(smem)), lbo, sbo);
}
/// `desc` moved on by `bytes` (a multiple of 16): the start address is the low field
/// (address / 16, 14 bits) and every operand lies below 256 KiB of the shared window, so the
/// sum never carries into the next field. One integer add per wgmma (in uniform registers
/// when the base is uniform) instead of rebuilding the descriptor from an address.
GLUKIT_DEVICE constexpr std::uint64_t desc_advance(std::uint64_t desc, std::uint32_t bytes) {
  return desc + (bytes >> 4);
}

/// Orders register accesses to the accumulators before the next wgmma.
GLUKIT_DEVICE inline void wgmma_fence() {
#if defined(GLUKIT_ARCH_SM90A)
  asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
#endif
}
GLUKIT_DEVICE inline void wgmma_commit() {
#if defined(GLUKIT_ARCH_SM90A)
  asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
#endif
}
/// Waits until at most N committed wgmma groups of this warpgroup are pending.
template <int N>
GLUKIT_DEVICE inline void wgmma_wait() {
#if defined(GLUKIT_ARCH_SM90A)
  asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(N) : "memory");
#endif
}
/// Keeps the compiler from moving accumulator reads/writes across wgmma.
template <int R>
GLUKIT_DEVICE inline void fence_accumulators(float (&d)[R]) {
#pragma unroll
  for (int i = 0; i < R; ++i) asm volatile("" : "+f"(d[i])::"memory");
}

/// m64nNk16 with T inputs (half_t: .f16, bfloat16_t: .bf16), or m64nNk32 with
/// float8_e4m3_t inputs (.e4m3, BKMajor only), and fp32 accumulators; BKMajor: B's
/// descriptor is K-major (tnspB = 0), else MN-major (tnspB = 1).
template <int N, class T = half_t, bool BKMajor = false>
struct Wgmma {
  static constexpr bool fp8 = std::is_same_v<T, float8_e4m3_t>;
  static_assert(N == 64 || N == 128 || N == 192 || N == 256, "Wgmma<N>: generated for N in {64, 128, 192, 256}");
  static_assert(Element<T> || fp8, "Wgmma<N, T>: T must be glukit::half_t, glukit::bfloat16_t or glukit::float8_e4m3_t");
  static_assert(!fp8 || BKMajor, "Wgmma<N, float8_e4m3_t>: e4m3 wgmma takes B K-major only (B stored n x k)");
  static constexpr int accumulators = N / 2;
  static constexpr int trans_b = BKMajor ? 0 : 1;
  GLUKIT_DEVICE static void mma(float (&d)[N / 2], std::uint64_t desc_a, std::uint64_t desc_b, int accumulate);
};

/// fp16 inputs, B row-major (the reference work's layout).
template <int N>
using WgmmaF16 = Wgmma<N, half_t, false>;

#define GLUKIT_WGMMA_N64_ASM(DT, K, TAIL) \
  asm volatile( \
      "{\n.reg .pred p;\nsetp.ne.b32 p, %34, 0;\n" \
      "wgmma.mma_async.sync.aligned.m64n64" K ".f32." DT "." DT " {" \
      "%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15," \
      "%16,%17,%18,%19,%20,%21,%22,%23,%24,%25,%26,%27,%28,%29,%30,%31" \
      "}, %32, %33, p, 1, 1" TAIL ";\n}\n" \
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), \
        "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), \
        "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), \
        "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]) \
      : "l"(desc_a), "l"(desc_b), "r"(accumulate), "n"(trans_b))

#define GLUKIT_WGMMA_N128_ASM(DT, K, TAIL) \
  asm volatile( \
      "{\n.reg .pred p;\nsetp.ne.b32 p, %66, 0;\n" \
      "wgmma.mma_async.sync.aligned.m64n128" K ".f32." DT "." DT " {" \
      "%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15," \
      "%16,%17,%18,%19,%20,%21,%22,%23,%24,%25,%26,%27,%28,%29,%30,%31," \
      "%32,%33,%34,%35,%36,%37,%38,%39,%40,%41,%42,%43,%44,%45,%46,%47," \
      "%48,%49,%50,%51,%52,%53,%54,%55,%56,%57,%58,%59,%60,%61,%62,%63" \
      "}, %64, %65, p, 1, 1" TAIL ";\n}\n" \
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), \
        "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), \
        "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), \
        "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), \
        "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), \
        "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), \
        "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), \
        "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63]) \
      : "l"(desc_a), "l"(desc_b), "r"(accumulate), "n"(trans_b))

#define GLUKIT_WGMMA_N192_ASM(DT, K, TAIL) \
  asm volatile( \
      "{\n.reg .pred p;\nsetp.ne.b32 p, %98, 0;\n" \
      "wgmma.mma_async.sync.aligned.m64n192" K ".f32." DT "." DT " {" \
      "%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15," \
      "%16,%17,%18,%19,%20,%21,%22,%23,%24,%25,%26,%27,%28,%29,%30,%31," \
      "%32,%33,%34,%35,%36,%37,%38,%39,%40,%41,%42,%43,%44,%45,%46,%47," \
      "%48,%49,%50,%51,%52,%53,%54,%55,%56,%57,%58,%59,%60,%61,%62,%63," \
      "%64,%65,%66,%67,%68,%69,%70,%71,%72,%73,%74,%75,%76,%77,%78,%79," \
      "%80,%81,%82,%83,%84,%85,%86,%87,%88,%89,%90,%91,%92,%93,%94,%95" \
      "}, %96, %97, p, 1, 1" TAIL ";\n}\n" \
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), \
        "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), \
        "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), \
        "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), \
        "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), \
        "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), \
        "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), \
        "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63]), \
        "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]), "+f"(d[70]), "+f"(d[71]), \
        "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]), "+f"(d[77]), "+f"(d[78]), "+f"(d[79]), \
        "+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83]), "+f"(d[84]), "+f"(d[85]), "+f"(d[86]), "+f"(d[87]), \
        "+f"(d[88]), "+f"(d[89]), "+f"(d[90]), "+f"(d[91]), "+f"(d[92]), "+f"(d[93]), "+f"(d[94]), "+f"(d[95]) \
      : "l"(desc_a), "l"(desc_b), "r"(accumulate), "n"(trans_b))

#define GLUKIT_WGMMA_N256_ASM(DT, K, TAIL) \
  asm volatile( \
      "{\n.reg .pred p;\nsetp.ne.b32 p, %130, 0;\n" \
      "wgmma.mma_async.sync.aligned.m64n256" K ".f32." DT "." DT " {" \
      "%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15," \
      "%16,%17,%18,%19,%20,%21,%22,%23,%24,%25,%26,%27,%28,%29,%30,%31," \
      "%32,%33,%34,%35,%36,%37,%38,%39,%40,%41,%42,%43,%44,%45,%46,%47," \
      "%48,%49,%50,%51,%52,%53,%54,%55,%56,%57,%58,%59,%60,%61,%62,%63," \
      "%64,%65,%66,%67,%68,%69,%70,%71,%72,%73,%74,%75,%76,%77,%78,%79," \
      "%80,%81,%82,%83,%84,%85,%86,%87,%88,%89,%90,%91,%92,%93,%94,%95," \
      "%96,%97,%98,%99,%100,%101,%102,%103,%104,%105,%106,%107,%108,%109,%110,%111," \
      "%112,%113,%114,%115,%116,%117,%118,%119,%120,%121,%122,%123,%124,%125,%126,%127" \
      "}, %128, %129, p, 1, 1" TAIL ";\n}\n" \
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), \
        "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), \
        "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), \
        "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), \
        "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), \
        "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), \
        "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), \
        "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63]), \
        "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]), "+f"(d[70]), "+f"(d[71]), \
        "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]), "+f"(d[77]), "+f"(d[78]), "+f"(d[79]), \
        "+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83]), "+f"(d[84]), "+f"(d[85]), "+f"(d[86]), "+f"(d[87]), \
        "+f"(d[88]), "+f"(d[89]), "+f"(d[90]), "+f"(d[91]), "+f"(d[92]), "+f"(d[93]), "+f"(d[94]), "+f"(d[95]), \
        "+f"(d[96]), "+f"(d[97]), "+f"(d[98]), "+f"(d[99]), "+f"(d[100]), "+f"(d[101]), "+f"(d[102]), "+f"(d[103]), \
        "+f"(d[104]), "+f"(d[105]), "+f"(d[106]), "+f"(d[107]), "+f"(d[108]), "+f"(d[109]), "+f"(d[110]), "+f"(d[111]), \
        "+f"(d[112]), "+f"(d[113]), "+f"(d[114]), "+f"(d[115]), "+f"(d[116]), "+f"(d[117]), "+f"(d[118]), "+f"(d[119]), \
        "+f"(d[120]), "+f"(d[121]), "+f"(d[122]), "+f"(d[123]), "+f"(d[124]), "+f"(d[125]), "+f"(d[126]), "+f"(d[127]) \
      : "l"(desc_a), "l"(desc_b), "r"(accumulate), "n"(trans_b))

template <int N, class T, bool BKMajor>
GLUKIT_DEVICE void Wgmma<N, T, BKMajor>::mma(float (&d)[N / 2], std::uint64_t desc_a, std::uint64_t desc_b,
                                            int accumulate) {
#if defined(GLUKIT_ARCH_SM90A)
  // 16-bit: k16, then imm-trans-a = 0 and imm-trans-b (the last operand); e4m3: k32
  // without them (that operand goes unused).
  constexpr bool bf16 = std::is_same_v<T, bfloat16_t>;
  if constexpr (N == 64) {
    if constexpr (fp8) GLUKIT_WGMMA_N64_ASM("e4m3", "k32", "");
    else if constexpr (bf16) GLUKIT_WGMMA_N64_ASM("bf16", "k16", ", 0, %35");
    else GLUKIT_WGMMA_N64_ASM("f16", "k16", ", 0, %35");
  } else if constexpr (N == 128) {
    if constexpr (fp8) GLUKIT_WGMMA_N128_ASM("e4m3", "k32", "");
    else if constexpr (bf16) GLUKIT_WGMMA_N128_ASM("bf16", "k16", ", 0, %67");
    else GLUKIT_WGMMA_N128_ASM("f16", "k16", ", 0, %67");
  } else if constexpr (N == 192) {
    if constexpr (fp8) GLUKIT_WGMMA_N192_ASM("e4m3", "k32", "");
    else if constexpr (bf16) GLUKIT_WGMMA_N192_ASM("bf16", "k16", ", 0, %99");
    else GLUKIT_WGMMA_N192_ASM("f16", "k16", ", 0, %99");
  } else {
    if constexpr (fp8) GLUKIT_WGMMA_N256_ASM("e4m3", "k32", "");
    else if constexpr (bf16) GLUKIT_WGMMA_N256_ASM("bf16", "k16", ", 0, %131");
    else GLUKIT_WGMMA_N256_ASM("f16", "k16", ", 0, %131");
  }
#else
  (void)d; (void)desc_a; (void)desc_b; (void)accumulate;
  __trap();
#endif
}

#undef GLUKIT_WGMMA_N64_ASM
#undef GLUKIT_WGMMA_N128_ASM
#undef GLUKIT_WGMMA_N192_ASM
#undef GLUKIT_WGMMA_N256_ASM

}  // namespace glukit::arch::hopper

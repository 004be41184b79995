/* Pruned selection networks for the median of 9, 25 and 27 values (generated from the same
 * construction as build_network() in cpu_median.c: Batcher's odd-even merge sort with +inf padding,
 * comparators that cannot reach the median removed). CE(a, b): a = min, b = max; MN(a, b): a = min;
 * MX(a, b): b = max. LF_MEDn_OUT names the register holding the median at the end. */
#ifndef LUMEN_FILTER_MEDIAN_NETS_H
#define LUMEN_FILTER_MEDIAN_NETS_H
/* 9 values: 24 comparators */
#define LF_MED9_OUT r4
#define LF_MED9_NET \
  CE(r0, r1) CE(r2, r3) CE(r4, r5) CE(r6, r7) CE(r0, r2) CE(r1, r3) CE(r4, r6) CE(r5, r7) CE(r1, r2) \
  CE(r5, r6) CE(r0, r4) CE(r1, r5) CE(r2, r6) MN(r3, r7) CE(r2, r4) CE(r3, r5) MX(r1, r2) CE(r3, r4) \
  MN(r5, r6) MX(r0, r8) MN(r4, r8) MX(r2, r4) MN(r3, r5) MX(r3, r4)
/* 25 values: 113 comparators */
#define LF_MED25_OUT r12
#define LF_MED25_NET \
  CE(r0, r1) CE(r2, r3) CE(r4, r5) CE(r6, r7) CE(r8, r9) CE(r10, r11) CE(r12, r13) CE(r14, r15) \
  CE(r16, r17) CE(r18, r19) CE(r20, r21) CE(r22, r23) CE(r0, r2) CE(r1, r3) CE(r4, r6) CE(r5, r7) \
  CE(r8, r10) CE(r9, r11) CE(r12, r14) CE(r13, r15) CE(r16, r18) CE(r17, r19) CE(r20, r22) \
  CE(r21, r23) CE(r1, r2) CE(r5, r6) CE(r9, r10) CE(r13, r14) CE(r17, r18) CE(r21, r22) CE(r0, r4) \
  CE(r1, r5) CE(r2, r6) CE(r3, r7) CE(r8, r12) CE(r9, r13) CE(r10, r14) CE(r11, r15) CE(r16, r20) \
  CE(r17, r21) CE(r18, r22) CE(r19, r23) CE(r2, r4) CE(r3, r5) CE(r10, r12) CE(r11, r13) CE(r18, r20) \
  CE(r19, r21) CE(r1, r2) CE(r3, r4) CE(r5, r6) CE(r9, r10) CE(r11, r12) CE(r13, r14) CE(r17, r18) \
  CE(r19, r20) CE(r21, r22) CE(r0, r8) CE(r1, r9) CE(r2, r10) CE(r3, r11) CE(r4, r12) CE(r5, r13) \
  CE(r6, r14) MN(r7, r15) CE(r16, r24) CE(r4, r8) CE(r5, r9) CE(r6, r10) CE(r7, r11) CE(r20, r24) \
  CE(r2, r4) CE(r3, r5) CE(r6, r8) CE(r7, r9) CE(r10, r12) CE(r11, r13) CE(r18, r20) CE(r19, r21) \
  CE(r22, r24) CE(r1, r2) CE(r3, r4) CE(r5, r6) CE(r7, r8) CE(r9, r10) CE(r11, r12) MN(r13, r14) \
  CE(r17, r18) CE(r19, r20) CE(r21, r22) CE(r23, r24) MX(r0, r16) MX(r1, r17) MX(r2, r18) MX(r3, r19) \
  MX(r4, r20) MX(r5, r21) MN(r6, r22) MN(r7, r23) MN(r8, r24) MX(r8, r16) MX(r9, r17) MN(r10, r18) \
  MN(r11, r19) MN(r12, r20) MN(r13, r21) MX(r6, r10) MX(r7, r11) MN(r12, r16) MN(r13, r17) \
  MX(r10, r12) MN(r11, r13) MX(r11, r12)
/* 27 values: 126 comparators */
#define LF_MED27_OUT r13
#define LF_MED27_NET \
  CE(r0, r1) CE(r2, r3) CE(r4, r5) CE(r6, r7) CE(r8, r9) CE(r10, r11) CE(r12, r13) CE(r14, r15) \
  CE(r16, r17) CE(r18, r19) CE(r20, r21) CE(r22, r23) CE(r24, r25) CE(r0, r2) CE(r1, r3) CE(r4, r6) \
  CE(r5, r7) CE(r8, r10) CE(r9, r11) CE(r12, r14) CE(r13, r15) CE(r16, r18) CE(r17, r19) CE(r20, r22) \
  CE(r21, r23) CE(r24, r26) CE(r1, r2) CE(r5, r6) CE(r9, r10) CE(r13, r14) CE(r17, r18) CE(r21, r22) \
  CE(r25, r26) CE(r0, r4) CE(r1, r5) CE(r2, r6) CE(r3, r7) CE(r8, r12) CE(r9, r13) CE(r10, r14) \
  CE(r11, r15) CE(r16, r20) CE(r17, r21) CE(r18, r22) CE(r19, r23) CE(r2, r4) CE(r3, r5) CE(r10, r12) \
  CE(r11, r13) CE(r18, r20) CE(r19, r21) CE(r1, r2) CE(r3, r4) CE(r5, r6) CE(r9, r10) CE(r11, r12) \
  CE(r13, r14) CE(r17, r18) CE(r19, r20) CE(r21, r22) CE(r25, r26) CE(r0, r8) CE(r1, r9) CE(r2, r10) \
  CE(r3, r11) CE(r4, r12) CE(r5, r13) CE(r6, r14) MN(r7, r15) CE(r16, r24) CE(r17, r25) CE(r18, r26) \
  CE(r4, r8) CE(r5, r9) CE(r6, r10) CE(r7, r11) CE(r20, r24) CE(r21, r25) CE(r22, r26) CE(r2, r4) \
  CE(r3, r5) CE(r6, r8) CE(r7, r9) CE(r10, r12) CE(r11, r13) CE(r18, r20) CE(r19, r21) CE(r22, r24) \
  CE(r23, r25) CE(r1, r2) CE(r3, r4) CE(r5, r6) CE(r7, r8) CE(r9, r10) CE(r11, r12) CE(r13, r14) \
  CE(r17, r18) CE(r19, r20) CE(r21, r22) CE(r23, r24) CE(r25, r26) MX(r0, r16) MX(r1, r17) MX(r2, r18) \
  MX(r3, r19) MX(r4, r20) MX(r5, r21) MX(r6, r22) MN(r7, r23) MN(r8, r24) MN(r9, r25) MN(r10, r26) \
  MX(r8, r16) MX(r9, r17) MX(r10, r18) MN(r11, r19) MN(r12, r20) MN(r13, r21) MN(r14, r22) MX(r7, r11) \
  MX(r12, r16) MN(r13, r17) MN(r14, r18) MX(r11, r13) MN(r14, r16) MN(r13, r14)
#endif

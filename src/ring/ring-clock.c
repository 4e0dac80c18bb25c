// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The run clock: what a record's time field counts, and how a reader turns
 * it into CLOCK_MONOTONIC nanoseconds.
 *
 * Reading CLOCK_MONOTONIC costs a record about twice what reading the time
 * stamp counter does, even through the vDSO (it reads the counter too, then
 * a sequence count and the kernel's conversion).  So when the counter can
 * stand for CLOCK_MONOTONIC, records carry raw counter ticks and the run
 * head carries what converts them:
 *
 *   static part   tsc_start with monotonic_ns (one moment), tsc_hz
 *   dynamic part  anchor_tsc with anchor_monotonic_ns, refreshed at flush
 *                 and close under anchor_seq (odd while written)
 *
 *   ns(t) = monotonic_ns + (t - tsc_start) * slope
 *   slope = (anchor_monotonic_ns - monotonic_ns) / (anchor_tsc - tsc_start)
 *           when the anchor is complete and agrees with tsc_hz within 1 %,
 *           else 10^9 / tsc_hz
 *
 * so records before the last anchor are interpolated between two readings
 * of both clocks, and those after it (a writer killed without a flush)
 * extrapolated with the last slope.  tsc_hz is measured over
 * RS_CALIBRATE_NS, each end bracketed by two counter reads; the error of
 * the pair is a few tens of ns, so the rate is good to about 10^-5 (36 ms
 * an hour) until the first anchor.  The rate is the CPU's and constant
 * (constant_tsc), so a process measures it at its first run and its later
 * runs reuse it: opening a recorder spins for 2 ms once per process, not
 * once per open.
 *
 * When the counter may stand for the clock: the CPU says its rate is
 * constant and it does not stop in idle states (rs_arch_counter_hz(), the
 * CPU's code in src/ring/arch/<cpu>/: on x86, constant_tsc and nonstop_tsc
 * in /proc/cpuinfo), and the kernel itself uses it as its clocksource -
 * which it does only after finding the counters of all CPUs in step,
 * something the CPU's word does not promise.  A CPU that publishes its
 * counter's rate is taken at its word; otherwise the rate is measured.  Otherwise, and when a test
 * asks (rs_clock_no_tsc), records carry CLOCK_MONOTONIC as before.  The
 * flags are the CPU's and read once with the rate; the clocksource is asked
 * at every run, since the kernel may give the counter up (it does when it
 * finds the CPUs out of step).
 */
#include <fcntl.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "ring/ring.h"

#define RS_CALIBRATE_NS 2000000u

bool rs_clock_no_tsc;

uint64_t rs_clock_ns(int clock)
{
	struct timespec ts;

	/* CLOCK_MONOTONIC and CLOCK_REALTIME are answered by the vDSO: no system call. */
	clock_gettime(clock, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

size_t rs_read_small(const char *path, char *buf, size_t cap)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	size_t got = 0;

	buf[0] = 0;
	if (fd < 0)
		return 0;
	while (got < cap - 1) {
		ssize_t n = read(fd, buf + got, cap - 1 - got);

		if (n <= 0)
			break;
		got += (size_t)n;
	}
	close(fd);
	buf[got] = 0;
	return got;
}

static bool kernel_uses_counter(void)
{
	char cs[32];

	return rs_read_small("/sys/devices/system/clocksource/clocksource0/current_clocksource", cs, sizeof(cs)) &&
	       strcmp(cs, RS_ARCH_CLOCKSOURCE "\n") == 0;
}

/*
 * floor(a * b / c) for c > 0, UINT64_MAX when it does not fit: exact, with
 * the compiler's 128-bit integers where it has them, else by long division
 * (32-bit targets), so every build converts times alike.
 */
static uint64_t mul_div(uint64_t a, uint64_t b, uint64_t c)
{
#ifdef __SIZEOF_INT128__
	__extension__ unsigned __int128 q = (unsigned __int128)a * b / c;

	return q > UINT64_MAX ? UINT64_MAX : (uint64_t)q;
#else
	uint64_t al = (uint32_t)a, ah = a >> 32, bl = (uint32_t)b, bh = b >> 32;
	uint64_t ll = al * bl, lh = al * bh, hl = ah * bl, hh = ah * bh;
	uint64_t mid = (ll >> 32) + (uint32_t)lh + (uint32_t)hl;
	uint64_t hi = hh + (lh >> 32) + (hl >> 32) + (mid >> 32), lo = (mid << 32) | (uint32_t)ll;
	uint64_t q = 0;

	if (hi >= c)
		return UINT64_MAX;
	/* hi:lo / c, one quotient bit at a time; hi < c throughout */
	for (int i = 0; i < 64; i++) {
		bool carry = hi >> 63;

		hi = hi << 1 | lo >> 63;
		lo <<= 1;
		q <<= 1;
		if (carry || hi >= c) {
			hi -= c;
			q |= 1;
		}
	}
	return q;
#endif
}

/* One moment on both clocks: the read of CLOCK_MONOTONIC between two counter reads, the tightest of a few. */
static void both_clocks(uint64_t *tsc, uint64_t *ns)
{
	uint64_t best = UINT64_MAX;

	for (int i = 0; i < 5; i++) {
		uint64_t t0 = rs_arch_ticks(), m = rs_clock_ns(CLOCK_MONOTONIC), t1 = rs_arch_ticks();

		if (t1 >= t0 && t1 - t0 < best) {
			best = t1 - t0;
			*tsc = t0 + (t1 - t0) / 2;
			*ns = m;
		}
	}
}

/* The counter's rate in Hz, over RS_CALIBRATE_NS from now; 0 if the counter went back. */
static uint64_t measure_rate(void)
{
	uint64_t t0, m0, t1, m1;

	both_clocks(&t0, &m0);
	do
		both_clocks(&t1, &m1);
	while (m1 - m0 < RS_CALIBRATE_NS);
	if (t1 <= t0)
		return 0;
	return mul_div(t1 - t0, 1000000000u, m1 - m0);
}

#define RATE_UNKNOWN 0u
#define RATE_NONE 1u /* the CPU rules the counter out (no real rate is this low) */

/*
 * The process's counter rate: measured once, at its first run that could
 * use the counter.  Two threads that open recorders at once may both
 * measure; either result is as good (relaxed: the value is all there is).
 */
static _Atomic uint64_t process_rate;

static uint64_t tsc_rate(void)
{
	uint64_t hz = atomic_load_explicit(&process_rate, memory_order_relaxed);

	if (hz == RATE_UNKNOWN) {
		hz = rs_arch_counter_hz();
		if (hz == RS_COUNTER_MEASURE)
			hz = measure_rate();
		else if (hz == RS_COUNTER_UNUSABLE)
			hz = RATE_NONE;
		if (hz != RATE_UNKNOWN) /* a counter that went back is measured again at the next run */
			atomic_store_explicit(&process_rate, hz, memory_order_relaxed);
	}
	return hz;
}

void rs_clock_pick(struct rs_run_head *h)
{
	uint64_t hz;

	h->clock = RS_CLOCK_MONOTONIC;
	h->tsc_start = 0;
	h->tsc_hz = 0;
	h->monotonic_ns = rs_clock_ns(CLOCK_MONOTONIC);
	if (rs_clock_no_tsc || !kernel_uses_counter())
		return;
	hz = tsc_rate();
	if (hz < RS_TSC_HZ_MIN || hz > RS_TSC_HZ_MAX)
		return; /* ruled out, a counter that went back, or a rate no reader accepts */
	both_clocks(&h->tsc_start, &h->monotonic_ns);
	h->tsc_hz = hz;
	h->clock = RS_CLOCK_TSC;
}

void rs_clock_anchor(struct rs_run_head *h)
{
	_Atomic uint32_t *seq = (_Atomic uint32_t *)&h->anchor_seq;
	uint32_t odd = (atomic_load_explicit(seq, memory_order_relaxed) + 1) | 1;
	uint64_t t, m;

	if (h->clock != RS_CLOCK_TSC)
		return;
	both_clocks(&t, &m);
	/* odd first, then the pair, then even: a reader (or a death) in between sees odd and ignores the pair */
	atomic_store_explicit(seq, odd, memory_order_relaxed);
	/*
	 * Orders the odd seq before the pair, and the release store after it
	 * orders the pair before the even seq: on a CPU that keeps store order
	 * they only keep the compiler from moving the stores.  A reader copying the
	 * file while a flush runs may still copy a torn pair (a file copy does
	 * not re-read seq); the 1 % agreement check in rs_clock_to_ns() drops
	 * most of those, and a torn anchor moves times, never records.
	 */
	atomic_thread_fence(memory_order_release);
	h->anchor_tsc = t;
	h->anchor_monotonic_ns = m;
	atomic_store_explicit(seq, odd + 1, memory_order_release);
}

uint64_t rs_clock_to_ns(const struct rs_run_head *h, uint64_t t)
{
	uint64_t num = 1000000000, den = h->tsc_hz, d;

	if (h->clock != RS_CLOCK_TSC || h->tsc_hz < RS_TSC_HZ_MIN || h->tsc_hz > RS_TSC_HZ_MAX)
		return t;
	if (h->anchor_seq && !(h->anchor_seq & 1) && h->anchor_tsc > h->tsc_start &&
	    h->anchor_monotonic_ns > h->monotonic_ns && h->anchor_monotonic_ns - h->monotonic_ns < (1ull << 62)) {
		uint64_t an = h->anchor_monotonic_ns - h->monotonic_ns, ad = h->anchor_tsc - h->tsc_start;
		/* the anchor's ns per second of tsc_hz ticks: within 1 % of 10^9 */
		uint64_t r = mul_div(an, den, ad);

		if (r >= 990000000u && r <= 1010000000u) {
			num = an;
			den = ad;
		}
	}
	if (t >= h->tsc_start) {
		d = mul_div(t - h->tsc_start, num, den);
		return d > UINT64_MAX - h->monotonic_ns ? UINT64_MAX : h->monotonic_ns + d;
	}
	d = mul_div(h->tsc_start - t, num, den);
	return d > h->monotonic_ns ? 0 : h->monotonic_ns - d;
}

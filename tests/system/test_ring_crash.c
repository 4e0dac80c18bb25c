// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * A writer killed while it opens: at each point of creating the file and of
 * starting a run (the kill points of src/ring/ring.h), the file must stay
 * one a later recorder opens, and the last run before the kill must stay
 * whole, through that later recorder's run too.
 *
 * A writer killed at any instant: a forked process with two writing threads
 * gets SIGKILL at a random moment, many times over.  After each kill the
 * reader must return every record whose write call returned (per thread, a
 * contiguous run of sequence numbers ending at the last acknowledged one,
 * or one later if that write completed but was not yet acknowledged; where
 * a write area wrapped, growing sequence numbers with holes an area's
 * overwrite left, never after the thread's newest records), with
 * its payload intact, and must skip and count the partial ones: at most one
 * per thread.  Each kill starts a new run in the same file, so the previous
 * run (killed the same way) must still be there and intact.
 *
 * The stack table: a writer killed at each point of inserting a stack
 * leaves no record naming an entry it did not finish, and writers that
 * insert the same stacks at once, killed at random, never leave a record
 * that reads back with other words, nor two index entries for one stack.
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "relstack/relstack.h"
#include "ring/ring.h"
#include "ring-fixture.h"

#define KILLS 300
#define WRITERS 2

struct progress {
	_Atomic uint64_t started[WRITERS];   /* seq + 1 of the write in progress or last begun */
	_Atomic uint64_t committed[WRITERS]; /* seq + 1 of the last write that returned */
	_Atomic int ready;
};

static struct progress *prog;
static struct relstack_recorder *rec;
static int ev;
static char paths[2][128]; /* one file per mode: a file keeps the geometry it was made with */
static const char *path;

static void *writer(void *arg)
{
	uint32_t t = (uint32_t)(uintptr_t)arg;

	relstack_recorder__thread_init();
	for (uint64_t seq = 0;; seq++) {
		int ret;

		atomic_store(&prog->started[t], seq + 1);
		ret = rs_seq_write(rec, ev, t, seq, (unsigned)(1 + seq % 48), NULL);
		if (ret == 0)
			atomic_store(&prog->committed[t], seq + 1);
		if (seq == 64)
			atomic_fetch_add(&prog->ready, 1);
	}
	return NULL;
}

/* The child: a recorder on `path` and @n threads running @fn until the kill. */
static void child_of(enum relstack_recorder_mode mode, unsigned n, void *(*fn)(void *))
{
	struct relstack_recorder_opts o = RELSTACK_RECORDER_OPTS_INIT;
	pthread_t th[8];

	/* overwrite: small, so runs wrap; stop: large, so most runs keep everything */
	o.size = mode == RELSTACK_MODE_STOP ? 16u << 20 : 256u << 10;
	o.mode = mode;
	rec = relstack_recorder__open(path, &o);
	if (!rec)
		_exit(2);
	ev = rs_seq_define(rec);
	for (unsigned i = 0; i < n; i++)
		pthread_create(&th[i], NULL, fn, (void *)(uintptr_t)i);
	for (;;)
		pause();
}

static void child(enum relstack_recorder_mode mode)
{
	child_of(mode, WRITERS, writer);
}

struct tally {
	uint64_t verified, skipped, partial_in_flight, runs_checked, overwritten_runs, stop_full_runs, evicted,
		complete_runs, holes;
};

/*
 * Whether a write area of the run of @generation in @file wrapped (its
 * head a lap or more past its start): records may have been overwritten.
 * Each area is a ring of its own, so the total written says nothing.
 */
static bool run_wrapped(const char *file, uint64_t generation)
{
	struct rs_file_head f;
	struct rs_run_head h;
	bool wrapped = false;
	FILE *fp = fopen(file, "rb");

	assert_non_null(fp);
	assert_int_equal(fread(&f, sizeof(f), 1, fp), 1);
	for (unsigned i = 0; i < RS_RUNS; i++) {
		assert_int_equal(fseek(fp, (long)f.run_offset[i], SEEK_SET), 0);
		assert_int_equal(fread(&h, sizeof(h), 1, fp), 1);
		if (h.generation != generation)
			continue;
		for (unsigned a = 0; a < h.areas; a++)
			wrapped |= h.area[a].head - h.base > h.ring_size / h.areas;
	}
	fclose(fp);
	return wrapped;
}

/* Checks one run; @committed/@started are NULL for the previous run (its kill is long past). */
static void check_run(struct relstack_reader *r, enum relstack_run_which which, const uint64_t *committed,
		      const uint64_t *started, struct tally *tl)
{
	struct relstack_run_info info;
	struct relstack_cursor *c;
	struct relstack_record rec_;
	uint64_t first[WRITERS], last[WRITERS], count[WRITERS] = { 0 }, lastpos[WRITERS] = { 0 }, seq;
	uint32_t w;
	bool wrapped;

	assert_int_equal(relstack_reader__run_info(r, which, &info), 0);
	wrapped = info.mode == RELSTACK_MODE_OVERWRITE && run_wrapped(path, info.generation);
	assert_int_equal(info.state, RELSTACK_RUN_ACTIVE); /* killed, never closed */
	assert_true(info.skipped <= WRITERS);
	c = relstack_reader__records(r, which);
	assert_non_null(c);
	while (rs_seq_next(c, &rec_, &w, &seq)) {
		uint32_t t = w;

		assert_true(t < WRITERS);
		if (count[t] == 0)
			first[t] = (uint64_t)seq;
		else if ((uint64_t)seq > last[t] + 1 && wrapped)
			/*
			 * Each write area keeps its own newest records: a thread that wrote a
			 * chunk in another CPU's area, which then wrapped past it, has a hole
			 * there.  Never after its newest records: checked below.
			 */
			tl->holes++;
		else if ((uint64_t)seq != last[t] + 1)
			fail_msg("thread %d: seq %lld (position +0x%llx) follows %llu (+0x%llx): a committed record "
				 "is missing (%s run, mode %u, ring %llu, written %llu, skipped %llu: %llu partial, "
				 "%llu damaged; first bad record: %s)", (int)t,
				 (long long)seq, (unsigned long long)(rec_.position & 0xffffffffffull),
				 (unsigned long long)last[t], (unsigned long long)(lastpos[t] & 0xffffffffffull),
				 committed ? "current" : "previous", info.mode, (unsigned long long)info.ring_size,
				 (unsigned long long)info.written, (unsigned long long)info.skipped,
				 (unsigned long long)info.skipped_partial, (unsigned long long)info.skipped_damaged,
				 relstack_reader__record_error(r, which) ? relstack_reader__record_error(r, which) :
									    "none");
		last[t] = (uint64_t)seq;
		lastpos[t] = rec_.position;
		count[t]++;
	}
	relstack_cursor__free(c);
	for (unsigned t = 0; t < WRITERS; t++) {
		if (!wrapped) {
			/* nothing overwritten: the run starts at seq 0 */
			if (count[t])
				assert_int_equal(first[t], 0);
		}
		if (!committed)
			continue;
		if (info.mode == RELSTACK_MODE_STOP && info.lost) {
			/* full: the thread's last records were refused; what is there is a prefix */
			tl->stop_full_runs++;
			continue;
		}
		if (wrapped && (count[t] == 0 || last[t] + 1 < committed[t])) {
			/*
			 * The thread's newest chunk was overwritten: it was descheduled for a
			 * whole lap of the write area that chunk was in while the other thread
			 * wrote there.  Each area keeps its own newest records
			 * (docs/format.md), so older records of the thread in another area
			 * may remain; the holes check above still holds within what remains.
			 */
			tl->evicted++;
			continue;
		}
		if (info.mode == RELSTACK_MODE_STOP)
			tl->complete_runs++; /* nothing lost, nothing overwritten: seq 0 .. last, all of them */
		/* every acknowledged record is there; the one in flight may be */
		assert_true(count[t] > 0);
		if (last[t] + 1 < committed[t])
			fail_msg("thread %u: last recovered seq %llu, but %llu were acknowledged", t,
				 (unsigned long long)last[t], (unsigned long long)committed[t]);
		assert_true(last[t] + 1 <= started[t]);
		if (started[t] > committed[t] && last[t] + 1 < started[t])
			tl->partial_in_flight++;
	}
	if (wrapped)
		tl->overwritten_runs++;
	tl->verified += count[0] + count[1];
	tl->skipped += info.skipped;
	tl->runs_checked++;
}

static void killed_writers_lose_no_committed_record_and_never_leave_a_partial_one_readable(void **state)
{
	char dir[64] = "/tmp/rs-crash-XXXXXX";
	struct tally tl = { 0 };
	/* RS_CRASH_SEED=N repeats a run's kill delays (the interleavings are the scheduler's) */
	const char *env = getenv("RS_CRASH_SEED");
	unsigned seed = env && *env ? (unsigned)strtoul(env, NULL, 0) : (unsigned)time(NULL) ^ (unsigned)getpid();

	assert_non_null(mkdtemp(dir));
	snprintf(paths[0], sizeof(paths[0]), "%s/overwrite", dir);
	snprintf(paths[1], sizeof(paths[1]), "%s/stop", dir);
	prog = mmap(NULL, sizeof(*prog), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	assert_true(prog != MAP_FAILED);
	printf("# seed %u\n", seed);
	srand(seed);

	for (unsigned k = 0; k < KILLS; k++) {
		enum relstack_recorder_mode mode = k % 3 == 2 ? RELSTACK_MODE_STOP : RELSTACK_MODE_OVERWRITE;
		uint64_t committed[WRITERS], started[WRITERS];
		struct relstack_reader *r;
		char err[256];
		struct relstack_reader_opts ro = { .sz = sizeof(ro), .errbuf = err, .errbuf_sz = sizeof(err) };
		struct timespec ts = { 0, (long)(rand() % 3000) * 1000 };
		int status;
		pid_t pid;

		path = paths[mode == RELSTACK_MODE_STOP];
		memset(prog, 0, sizeof(*prog));
		pid = fork();
		assert_true(pid >= 0);
		if (pid == 0)
			child(mode);
		while (atomic_load(&prog->ready) < WRITERS) {
			if (waitpid(pid, &status, WNOHANG) == pid)
				fail_msg("writer exited early, status %d", status);
			sched_yield();
		}
		nanosleep(&ts, NULL);
		kill(pid, SIGKILL);
		assert_int_equal(waitpid(pid, &status, 0), pid);
		assert_true(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
		for (unsigned t = 0; t < WRITERS; t++) {
			committed[t] = atomic_load(&prog->committed[t]);
			started[t] = atomic_load(&prog->started[t]);
		}
		r = relstack_reader__open(path, &ro);
		if (!r)
			fail_msg("kill %u: %s", k, err);
		/* the first kill of each file leaves one run, later ones the run before it too */
		assert_int_equal(relstack_reader__run_count(r), k == 0 || k == 2 ? 1 : 2);
		check_run(r, RELSTACK_RUN_CURRENT, committed, started, &tl);
		if (k != 0 && k != 2)
			check_run(r, RELSTACK_RUN_PREVIOUS, NULL, NULL, &tl);
		relstack_reader__close(r);
	}
	printf("# kills: %u, runs checked: %llu, records verified: %llu, partial records skipped: %llu, "
	       "writes in flight not recovered: %llu, overwritten runs: %llu, full stop-mode runs: %llu, "
	       "writers overwritten whole: %llu, complete stop-mode writer runs: %llu, "
	       "holes an area's overwrite left: %llu\n",
	       KILLS, (unsigned long long)tl.runs_checked, (unsigned long long)tl.verified,
	       (unsigned long long)tl.skipped, (unsigned long long)tl.partial_in_flight,
	       (unsigned long long)tl.overwritten_runs, (unsigned long long)tl.stop_full_runs,
	       (unsigned long long)tl.evicted, (unsigned long long)tl.complete_runs, (unsigned long long)tl.holes);
	/* the kills did land inside writes, and the runs did wrap: the test tested something */
	assert_true(tl.partial_in_flight > 0);
	assert_true(tl.skipped > 0);
	assert_true(tl.overwritten_runs > 0);
	unlink(paths[0]);
	unlink(paths[1]);
	rmdir(dir);
	munmap(prog, sizeof(*prog));
}

/* ---- killed while opening ---- */

/* Opens @path, writes @count records from @first and closes, unless the kill point @kill_at ends it first. */
static void open_run(const char *file, const char *kill_at, uint64_t first, unsigned count)
{
	struct relstack_recorder *r;
	int id;

	rs_kill_at = kill_at;
	r = relstack_recorder__open(file, NULL);
	rs_kill_at = NULL;
	if (!r)
		fail_msg("open %s: %s", file, strerror(errno));
	id = rs_seq_define(r);
	for (uint64_t s = first; s < first + count; s++)
		assert_int_equal(rs_seq_write(r, id, 0, s, (unsigned)(s % 8), NULL), 0);
	relstack_recorder__close(r);
}

/* The same in a child that must die at @kill_at. */
static void open_killed(const char *file, const char *kill_at)
{
	int status;
	pid_t pid = fork();

	assert_true(pid >= 0);
	if (pid == 0) {
		open_run(file, kill_at, 1000, 1);
		_exit(0);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	if (!WIFSIGNALED(status) || WTERMSIG(status) != SIGKILL)
		fail_msg("%s: the writer was not killed there (status 0x%x)", kill_at, status);
}

/* Records first .. first + count - 1 are the whole of run @which, generation @gen. */
static void expect_run(struct relstack_reader *r, enum relstack_run_which which, uint64_t gen, uint64_t first,
		       unsigned count)
{
	struct relstack_run_info info;
	struct relstack_cursor *c;
	struct relstack_record rec_;
	uint64_t next = first, seq;
	uint32_t t;

	assert_int_equal(relstack_reader__run_info(r, which, &info), 0);
	assert_int_equal(info.generation, gen);
	c = relstack_reader__records(r, which);
	assert_non_null(c);
	while (rs_seq_next(c, &rec_, &t, &seq))
		assert_int_equal(seq, next++);
	relstack_cursor__free(c);
	assert_int_equal(next, first + count);
	assert_int_equal(info.skipped, 0);
}

static void a_writer_killed_while_creating_the_file_leaves_no_file_a_recorder_refuses(void **state)
{
	static const char *const points[] = { "create-sized", "create-written" };

	for (size_t i = 0; i < RS_ARRAY_SIZE(points); i++) {
		struct rs_tmpfile tf;
		struct relstack_reader *r;

		rs_tmpfile_make(&tf, "crash-create");
		open_killed(tf.path, points[i]);
		/* the file is made aside and linked whole: a kill before that leaves no file at the path */
		if (access(tf.path, F_OK) == 0 || errno != ENOENT)
			fail_msg("%s: a file was left at the path", points[i]);
		open_run(tf.path, NULL, 0, 10);
		r = rs_seq_reader(tf.path);
		assert_int_equal(relstack_reader__run_count(r), 1);
		expect_run(r, RELSTACK_RUN_CURRENT, 1, 0, 10);
		relstack_reader__close(r);
		rs_tmpfile_remove(&tf);
	}
}

static void a_writer_killed_while_starting_a_run_leaves_the_previous_run_whole(void **state)
{
	static const struct {
		const char *point;
		bool started; /* the new run exists (state 1) when the kill comes */
		const char *says; /* what the reader says of the new run's area */
	} points[] = {
		{ "start-unhashed", false, "a run was being started here when its writer stopped" },
		{ "start-cleared", false, "a run was being started here when its writer stopped" },
		{ "start-written", false, "a run was being started here when its writer stopped" },
		{ "start-hashed", false, "state 0: a run was being started here when its writer stopped" },
		{ "start-active", true, "object table image not written" },
		{ "open-schemas", true, "object table image not written" },
		{ "open-objtab", true, "object table image not written" },
	};

	for (size_t i = 0; i < RS_ARRAY_SIZE(points); i++) {
		struct rs_tmpfile tf;
		struct relstack_reader *r;
		const char *err;

		rs_tmpfile_make(&tf, "crash-start");
		open_run(tf.path, NULL, 0, 10);   /* generation 1, area 0 */
		open_run(tf.path, NULL, 100, 12); /* generation 2, area 1: the run that must survive */
		open_killed(tf.path, points[i].point); /* into area 0 */

		r = rs_seq_reader(tf.path);
		err = relstack_reader__run_error(r, 0);
		if (!err || !strstr(err, points[i].says))
			fail_msg("%s: run area 0 says \"%s\", expected \"%s\"", points[i].point, err ? err : "nothing",
				 points[i].says);
		if (points[i].started) {
			/* an empty current run, never the object table of the run it replaced */
			assert_int_equal(relstack_reader__run_count(r), 2);
			expect_run(r, RELSTACK_RUN_CURRENT, 3, 0, 0);
			assert_int_equal(relstack_reader__object_count(r, RELSTACK_RUN_CURRENT), 0);
			expect_run(r, RELSTACK_RUN_PREVIOUS, 2, 100, 12);
		} else {
			assert_int_equal(relstack_reader__run_count(r), 1);
			expect_run(r, RELSTACK_RUN_CURRENT, 2, 100, 12);
		}
		relstack_reader__close(r);

		/* the next recorder starts its run where the killed one was: generation 2 stays the previous run */
		open_run(tf.path, NULL, 200, 5);
		r = rs_seq_reader(tf.path);
		assert_int_equal(relstack_reader__run_count(r), 2);
		expect_run(r, RELSTACK_RUN_CURRENT, points[i].started ? 4 : 3, 200, 5);
		if (points[i].started)
			expect_run(r, RELSTACK_RUN_PREVIOUS, 3, 0, 0);
		else
			expect_run(r, RELSTACK_RUN_PREVIOUS, 2, 100, 12);
		assert_null(relstack_reader__run_error(r, points[i].started ? 1 : 0)); /* the area the next run took */
		relstack_reader__close(r);
		rs_tmpfile_remove(&tf);
	}
}

/* ---- killed while inserting a stack ---- */

/* Records 0..4 with stacks of their own, then record 5, whose new stack is being inserted at @point. */
static void insert_killed(const char *file, const char *point)
{
	int status;
	pid_t pid = fork();

	assert_true(pid >= 0);
	if (pid == 0) {
		struct relstack_recorder *r = relstack_recorder__open(file, NULL);
		int id;

		if (!r)
			_exit(2);
		id = rs_seq_define(r);
		for (uint64_t s = 0; s < 5; s++)
			if (rs_seq_write(r, id, 0, s, 12, NULL) != 0)
				_exit(3);
		rs_kill_at = point;
		rs_seq_write(r, id, 0, 5, 12, NULL);
		_exit(0);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	if (!WIFSIGNALED(status) || WTERMSIG(status) != SIGKILL)
		fail_msg("%s: the writer was not killed there (status 0x%x)", point, status);
}

static void a_writer_killed_while_inserting_a_stack_leaves_no_record_naming_a_partial_entry(void **state)
{
	static const struct {
		const char *point;
		unsigned entries; /* whole entries the index names after the kill */
	} points[] = {
		{ "stack-reserved", 5 },  /* arena bytes taken, nothing written */
		{ "stack-written", 5 },   /* words written, no checksum, not in the index */
		{ "stack-published", 6 }, /* in the index; the record naming it never begun */
	};

	for (size_t i = 0; i < RS_ARRAY_SIZE(points); i++) {
		struct relstack_stack_table_info st;
		struct rs_tmpfile tf;
		struct relstack_reader *r;

		rs_tmpfile_make(&tf, "crash-insert");
		insert_killed(tf.path, points[i].point);
		r = rs_seq_reader(tf.path);
		expect_run(r, RELSTACK_RUN_CURRENT, 1, 0, 5);
		assert_int_equal(relstack_reader__stack_table(r, RELSTACK_RUN_CURRENT, &st), 0);
		if (st.entries != points[i].entries || st.damaged || st.ref_records != 5)
			fail_msg("%s: %llu entries, %llu damaged, %llu records naming one", points[i].point,
				 (unsigned long long)st.entries, (unsigned long long)st.damaged,
				 (unsigned long long)st.ref_records);
		relstack_reader__close(r);
		/* the next recorder's run is whole, and the killed one stays the previous run */
		open_run(tf.path, NULL, 100, 12);
		r = rs_seq_reader(tf.path);
		expect_run(r, RELSTACK_RUN_CURRENT, 2, 100, 12);
		expect_run(r, RELSTACK_RUN_PREVIOUS, 1, 0, 5);
		relstack_reader__close(r);
		rs_tmpfile_remove(&tf);
	}
}

#define SAME_WRITERS 4
#define SAME_KILLS 60
#define SAME_STACKS 64 /* the stacks every writer repeats; new ones come between them */

static void *same_writer(void *arg)
{
	uint32_t t = (uint32_t)(uintptr_t)arg;

	relstack_recorder__thread_init();
	for (uint64_t seq = 0;; seq++) {
		/* writer 100's stack k: the same words whichever thread writes it */
		uint64_t k = seq % 2 ? (seq / 2 + t) % SAME_STACKS : SAME_STACKS + seq / 2;

		rs_seq_write(rec, ev, 100, k, (unsigned)(1 + k % 40), NULL);
		if (seq == 64)
			atomic_fetch_add(&prog->ready, 1);
	}
	return NULL;
}

static void writers_killed_while_inserting_the_same_stacks_never_leave_wrong_frames(void **state)
{
	char dir[64] = "/tmp/rs-crash-same-XXXXXX";
	const char *env = getenv("RS_CRASH_SEED");
	unsigned seed = env && *env ? (unsigned)strtoul(env, NULL, 0) : (unsigned)time(NULL) ^ (unsigned)getpid();
	uint64_t records = 0, refs = 0, entries = 0, partial = 0;

	assert_non_null(mkdtemp(dir));
	snprintf(paths[0], sizeof(paths[0]), "%s/same", dir);
	path = paths[0];
	prog = mmap(NULL, sizeof(*prog), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	assert_true(prog != MAP_FAILED);
	printf("# seed %u\n", seed);
	srand(seed);
	for (unsigned k = 0; k < SAME_KILLS; k++) {
		struct timespec ts = { 0, (long)(rand() % 2000) * 1000 };
		struct relstack_stack_table_info st;
		struct relstack_run_info info;
		struct relstack_reader *r;
		struct relstack_cursor *c;
		struct relstack_record rec_;
		uint64_t seq, top = 0;
		uint32_t w;
		int status;
		pid_t pid;

		memset(prog, 0, sizeof(*prog));
		pid = fork();
		assert_true(pid >= 0);
		if (pid == 0)
			child_of(RELSTACK_MODE_OVERWRITE, SAME_WRITERS, same_writer);
		while (atomic_load(&prog->ready) < SAME_WRITERS) {
			if (waitpid(pid, &status, WNOHANG) == pid)
				fail_msg("writer exited early, status %d", status);
			sched_yield();
		}
		nanosleep(&ts, NULL);
		kill(pid, SIGKILL);
		assert_int_equal(waitpid(pid, &status, 0), pid);
		r = rs_seq_reader(path);
		c = relstack_reader__records(r, RELSTACK_RUN_CURRENT);
		assert_non_null(c);
		/* rs_seq_next() fails the test on any word other than the stack's */
		while (rs_seq_next(c, &rec_, &w, &seq)) {
			assert_int_equal(w, 100);
			top = seq > top ? seq : top;
		}
		relstack_cursor__free(c);
		assert_int_equal(relstack_reader__run_info(r, RELSTACK_RUN_CURRENT, &info), 0);
		assert_int_equal(relstack_reader__stack_table(r, RELSTACK_RUN_CURRENT, &st), 0);
		assert_true(info.skipped_partial <= SAME_WRITERS);
		assert_int_equal(info.skipped_damaged + info.skipped_malformed, 0);
		assert_int_equal(st.damaged, 0);
		/* one entry per stack: never more than stacks 0 .. top and those being inserted at the kill */
		assert_true(st.entries <= top + 1 + SAME_WRITERS);
		records += info.records;
		refs += st.ref_records;
		entries += st.entries;
		partial += info.skipped_partial;
		relstack_reader__close(r);
	}
	printf("# kills: %u, records verified: %llu, naming an entry: %llu, entries: %llu, partial records: %llu\n",
	       SAME_KILLS, (unsigned long long)records, (unsigned long long)refs, (unsigned long long)entries,
	       (unsigned long long)partial);
	assert_true(refs > 0);
	unlink(paths[0]);
	rmdir(dir);
	munmap(prog, sizeof(*prog));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(a_writer_killed_while_creating_the_file_leaves_no_file_a_recorder_refuses),
		cmocka_unit_test(a_writer_killed_while_starting_a_run_leaves_the_previous_run_whole),
		cmocka_unit_test(killed_writers_lose_no_committed_record_and_never_leave_a_partial_one_readable),
		cmocka_unit_test(a_writer_killed_while_inserting_a_stack_leaves_no_record_naming_a_partial_entry),
		cmocka_unit_test(writers_killed_while_inserting_the_same_stacks_never_leave_wrong_frames),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

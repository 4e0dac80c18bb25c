// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * trace-cmd data files into relstack buffer files.
 *
 * libtracecmd reads the file (every version, compressed or not) and its
 * events; the stacks it holds are absolute addresses of the machine that
 * recorded it, made relative here with the kallsyms text the file keeps.
 * libtracecmd gives that text only to libtraceevent's
 * tep_parse_kallsyms(): the relstack command defines that function too
 * (exported from the executable, so it comes first), keeps a copy while
 * an import opens its file, and hands the text on to libtraceevent's.
 * Events come per CPU in time order, as from tracefs pages (kconv.c).
 */
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <trace-cmd/trace-cmd.h>
#include <traceevent/event-parse.h>

#include "kernel/kernel.h"
#include "relstack-local.h"
#include "relstack/recorder.h"
#include "relstack/relstack.h"
#include "ring/recorder-local.h"

static char *kallsyms_copy;
static bool kallsyms_wanted;

__attribute__((visibility("default"))) int tep_parse_kallsyms(struct tep_handle *tep, const char *kallsyms);
int tep_parse_kallsyms(struct tep_handle *tep, const char *kallsyms)
{
	int (*real)(struct tep_handle *, const char *);
	void *sym = dlsym(RTLD_NEXT, "tep_parse_kallsyms");

	memcpy(&real, &sym, sizeof(real));

	if (kallsyms_wanted && kallsyms && !kallsyms_copy)
		kallsyms_copy = strdup(kallsyms);
	return real ? real(tep, kallsyms) : -1;
}

struct import {
	struct rs_kconv *conv;
	uint64_t n;
};

static int one_record(struct tracecmd_input *h, struct tep_record *r, int cpu, void *arg)
{
	struct import *im = arg;

	if (r->size > 0 && cpu >= 0)
		rs_kconv_event(im->conv, r->data, (size_t)r->size, (unsigned)cpu, r->ts);
	/* a bounded batch: records are written in time order per batch */
	if (++im->n % 4096 == 0)
		rs_kconv_flush(im->conv);
	return 0;
}

int rs_kimport(const char *tracedat, const char *output, char *errbuf, size_t errbuf_sz)
{
	struct relstack_recorder_opts ro = RELSTACK_RECORDER_OPTS_INIT;
	struct tracecmd_input *h, *use;
	struct relstack_recorder *rec = NULL;
	struct rs_ksyms syms;
	struct rs_ktab *kt = NULL;
	struct import im = { 0 };
	struct rs_krecord_stats st;
	struct stat sb;
	int ret;

	memset(&syms, 0, sizeof(syms));
	free(kallsyms_copy);
	kallsyms_copy = NULL;
	kallsyms_wanted = true;
	tracecmd_set_loglevel(TEP_LOG_NONE);
	h = tracecmd_open(tracedat, TRACECMD_FL_LOAD_NO_PLUGINS);
	kallsyms_wanted = false;
	if (!h)
		return rs_kfail(errbuf, errbuf_sz, -EINVAL, "%s: not a trace-cmd data file libtracecmd can read", tracedat);
	if (!kallsyms_copy) {
		ret = rs_kfail(errbuf, errbuf_sz, -ENOENT, "%s: holds no kallsyms: cannot make its stacks relative", tracedat);
		goto out;
	}
	ret = rs_ksyms_parse(kallsyms_copy, strlen(kallsyms_copy), &syms);
	if (ret < 0) {
		ret = rs_kfail(errbuf, errbuf_sz, ret, "%s: its kallsyms have no _stext (recorded without root?)", tracedat);
		goto out;
	}
	/* no modules: their load addresses are not in the file */
	kt = rs_ktab_new(&syms, NULL, 0, "/nonexistent");
	if (!kt) {
		ret = rs_kfail(errbuf, errbuf_sz, -errno, "kernel object table: %s", strerror(errno));
		goto out;
	}
	/* room for every event: relative records take about what the file's events do */
	if (stat(tracedat, &sb) == 0)
		ro.size = (uint64_t)sb.st_size * 4 > (1ull << 30) ? 1ull << 30 : (uint64_t)sb.st_size * 4;
	if (ro.size < (16ull << 20))
		ro.size = 16ull << 20;
	rec = rs_recorder_open_foreign(output, &ro);
	if (!rec) {
		ret = rs_kfail(errbuf, errbuf_sz, -errno, "%s: %s", output, relstack_strerror(errno));
		goto out;
	}
	{
		size_t isz;
		unsigned cap;
		void *img = rs_recorder_objtab_image(rec, &isz, &cap);

		rs_ktab_publish(kt, img, cap);
	}
	/* trace-cmd record -B NAME keeps the events in the instance's buffer: the first that has any */
	use = h;
	for (int i = 0; i < tracecmd_buffer_instances(h) && use == h; i++) {
		struct tracecmd_input *b = tracecmd_buffer_instance_handle(h, i);

		if (b)
			use = b;
	}
	im.conv = rs_kconv_new(tracecmd_get_tep(use), kt, rec, NULL, 0, 0);
	if (!im.conv) {
		ret = rs_kfail(errbuf, errbuf_sz, -errno, "%s: %s", output, strerror(errno));
		if (use != h)
			tracecmd_close(use);
		goto out;
	}
	tracecmd_iterate_events(use, NULL, 0, one_record, &im);
	rs_kconv_finish(im.conv);
	rs_kconv_stats(im.conv, &st);
	if (st.lost)
		rs_recorder_count_lost(rec, st.lost);
	ret = (int)(st.events > INT32_MAX ? INT32_MAX : st.events);
	rs_kconv_free(im.conv);
	if (use != h)
		tracecmd_close(use);
out:
	if (rec)
		relstack_recorder__close(rec);
	rs_ktab_free(kt);
	rs_ksyms_free(&syms);
	tracecmd_close(h);
	free(kallsyms_copy);
	kallsyms_copy = NULL;
	return ret;
}

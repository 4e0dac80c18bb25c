/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The recorder object, shared by the recorder and the crash handler. */
#ifndef RELSTACK_RECORDER_LOCAL_H
#define RELSTACK_RECORDER_LOCAL_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "relstack/recorder.h"
#include "ring/ring.h"

struct relstack_recorder {
	struct rs_ring ring;
	pthread_mutex_t lock;         /* schema definitions and clock anchors only */
	int fd;
	void *map;
	uint64_t map_size;
	struct rs_file_head *file;
	unsigned char *area;          /* this run's area */
	struct rs_run_head *run;
	struct rs_schema *schemas;    /* in the file */
	uint16_t schema_size[RS_SCHEMAS]; /* 0 and undefined look alike: see schemas[].seq */
	unsigned flags;               /* RELSTACK_RECORDER_* */
	int mirror;                   /* object table mirror id */
	bool foreign_objtab;          /* the run's object table is kept by the caller, not this process's */
};

RS_HIDDEN void rs_run_layout(uint64_t ring_size, unsigned objtab_capacity, struct rs_run_head *h,
			     uint64_t *area_size);
RS_HIDDEN uint32_t rs_ring_tid(void);
/* The crash handler drops its recorder before it is closed. */
RS_HIDDEN void rs_crash_handler_forget(struct relstack_recorder *rec);

/*
 * A recorder whose run keeps an object table that is not this process's
 * (the kernel's objects): the image starts empty, and the caller fills it
 * through rs_recorder_objtab_image() with rs_objtab_image_put*().
 */
RS_HIDDEN struct relstack_recorder *rs_recorder_open_foreign(const char *path,
							      const struct relstack_recorder_opts *opts);
/* That image; NULL for a recorder that mirrors the process's table. */
RS_HIDDEN void *rs_recorder_objtab_image(struct relstack_recorder *rec, size_t *size, unsigned *capacity);
/*
 * relstack_recorder__write() for a record of task @tid rather than of the
 * calling thread: a recorder that writes other tasks' events (a kernel
 * event's task).
 */
RS_HIDDEN int rs_recorder_write_tid(struct relstack_recorder *rec, uint32_t tid, unsigned event_id,
				    const uint64_t *words, size_t n, const struct relstack_verdict *v,
				    const void *fields, size_t fields_size, unsigned flags);
/* Records the source lost before they reached the recorder (a kernel ring's overruns): the run's lost counter. */
RS_HIDDEN void rs_recorder_count_lost(struct relstack_recorder *rec, uint64_t n);

#endif

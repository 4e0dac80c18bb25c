/* SPDX-License-Identifier: GPL-2.0 */
#undef TRACE_SYSTEM
#define TRACE_SYSTEM relstack_test

#if !defined(_RELSTACK_TEST_TRACE_H) || defined(TRACE_HEADER_MULTI_READ)
#define _RELSTACK_TEST_TRACE_H

#include <linux/tracepoint.h>

/* Hit at the end of the test module's known call chain. */
TRACE_EVENT(relstack_test_hit,

	TP_PROTO(int context, unsigned long count),

	TP_ARGS(context, count),

	TP_STRUCT__entry(
		__field(int, context)
		__field(unsigned long, count)
	),

	TP_fast_assign(
		__entry->context = context;
		__entry->count = count;
	),

	TP_printk("context=%d count=%lu", __entry->context, __entry->count)
);

#endif /* _RELSTACK_TEST_TRACE_H */

#undef TRACE_INCLUDE_PATH
#define TRACE_INCLUDE_PATH .
#undef TRACE_INCLUDE_FILE
#define TRACE_INCLUDE_FILE relstack_test_trace
#include <trace/define_trace.h>

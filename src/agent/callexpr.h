/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * A --call specification, 'FUNCTION [if EXPR]', compiled into a fixed-size
 * tree evaluated without allocation on every call of FUNCTION.
 *
 * EXPR compares the integer arguments arg0..arg5 with constants:
 *   or   := and ( '||' and )*
 *   and  := cmp ( '&&' cmp )*
 *   cmp  := bits ( ( '==' | '!=' | '<' | '<=' | '>' | '>=' ) bits )?
 *   bits := atom ( '&' atom )*
 *   atom := 'arg0'..'arg5' | NUMBER | '(' or ')'
 * NUMBER is decimal, 0x hexadecimal or 0 octal, optionally negative.
 * Comparisons are signed 64-bit; a lone value is true when non-zero.
 */
#ifndef RELSTACK_AGENT_CALLEXPR_H
#define RELSTACK_AGENT_CALLEXPR_H

#include <stddef.h>
#include <stdint.h>

#define RS_CALL_NAME_MAX 63
#define RS_CALL_NODES_MAX 64

enum rs_call_op {
	RS_CALL_CONST, RS_CALL_ARG, RS_CALL_AND_BITS,
	RS_CALL_EQ, RS_CALL_NE, RS_CALL_LT, RS_CALL_LE, RS_CALL_GT, RS_CALL_GE,
	RS_CALL_LAND, RS_CALL_LOR,
};

struct rs_call_node {
	enum rs_call_op op;
	int16_t left, right; /* node indexes */
	int64_t value;       /* RS_CALL_CONST: the constant; RS_CALL_ARG: the argument number */
};

struct rs_call_filter {
	char function[RS_CALL_NAME_MAX + 1];
	int root;            /* -1: every call matches */
	unsigned nnodes;
	struct rs_call_node nodes[RS_CALL_NODES_MAX];
};

/*
 * Compile @spec into @f.  Returns 0, or the 1-based column of the first
 * character that is wrong, negated, with @err (of @errsz bytes) saying
 * what was expected there.
 */
int rs_call_parse(const char *spec, struct rs_call_filter *f, char *err, size_t errsz);

/* Whether the call with arguments @args[0..5] matches.  Async-signal-safe. */
int rs_call_match(const struct rs_call_filter *f, const uint64_t args[6]);

#endif

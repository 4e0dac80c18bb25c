// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The --call filter language (grammar in callexpr.h): a recursive-descent
 * parser into a node array, so that the evaluation on the hot path of the
 * interposer reads a few nodes and allocates nothing.  The parser runs
 * twice for every specification: in `relstack record`, which reports a
 * bad expression before the program starts, and in the agent.
 */
#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/callexpr.h"

struct parser {
	const char *s, *p;
	struct rs_call_filter *f;
	char *err;
	size_t errsz;
	int col; /* column of the first error, 0 while none */
};

__attribute__((format(printf, 2, 3))) static int fail(struct parser *ps, const char *fmt, ...)
{
	va_list ap;

	if (!ps->col) {
		ps->col = (int)(ps->p - ps->s) + 1;
		va_start(ap, fmt);
		vsnprintf(ps->err, ps->errsz, fmt, ap);
		va_end(ap);
	}
	return -1;
}

static void skip_space(struct parser *ps)
{
	while (*ps->p == ' ' || *ps->p == '\t')
		ps->p++;
}

static int node(struct parser *ps, enum rs_call_op op, int left, int right, int64_t value)
{
	struct rs_call_node *n;

	if (ps->f->nnodes == RS_CALL_NODES_MAX)
		return fail(ps, "expression longer than %d terms", RS_CALL_NODES_MAX);
	n = &ps->f->nodes[ps->f->nnodes];
	n->op = op;
	n->left = (int16_t)left;
	n->right = (int16_t)right;
	n->value = value;
	return (int)ps->f->nnodes++;
}

static int parse_or(struct parser *ps);

static int parse_atom(struct parser *ps)
{
	skip_space(ps);
	if (*ps->p == '(') {
		int n;

		ps->p++;
		n = parse_or(ps);
		if (n < 0)
			return n;
		skip_space(ps);
		if (*ps->p != ')')
			return fail(ps, "expected ')'");
		ps->p++;
		return n;
	}
	if (!strncmp(ps->p, "arg", 3) && ps->p[3] >= '0' && ps->p[3] <= '9') {
		if (ps->p[3] > '5' || isalnum((unsigned char)ps->p[4]) || ps->p[4] == '_') {
			ps->p += 3;
			return fail(ps, "arguments are arg0 to arg5");
		}
		ps->p += 4;
		return node(ps, RS_CALL_ARG, -1, -1, ps->p[-1] - '0');
	}
	if (isdigit((unsigned char)*ps->p) || (*ps->p == '-' && isdigit((unsigned char)ps->p[1]))) {
		char *end;
		long long v;

		errno = 0;
		if (*ps->p == '-')
			v = strtoll(ps->p, &end, 0);
		else
			v = (long long)strtoull(ps->p, &end, 0);
		if (errno || isalnum((unsigned char)*end) || *end == '_')
			return fail(ps, "not a 64-bit number");
		ps->p = end;
		return node(ps, RS_CALL_CONST, -1, -1, v);
	}
	return fail(ps, "expected arg0..arg5, a number or '('");
}

static int parse_bits(struct parser *ps)
{
	int left = parse_atom(ps);

	while (left >= 0) {
		skip_space(ps);
		if (ps->p[0] != '&' || ps->p[1] == '&')
			break;
		ps->p++;
		int right = parse_atom(ps);

		if (right < 0)
			return right;
		left = node(ps, RS_CALL_AND_BITS, left, right, 0);
	}
	return left;
}

static int parse_cmp(struct parser *ps)
{
	static const struct { const char *s; enum rs_call_op op; } ops[] = {
		{ "==", RS_CALL_EQ }, { "!=", RS_CALL_NE }, { "<=", RS_CALL_LE },
		{ ">=", RS_CALL_GE }, { "<", RS_CALL_LT }, { ">", RS_CALL_GT },
	};
	int left = parse_bits(ps);

	if (left < 0)
		return left;
	skip_space(ps);
	for (unsigned i = 0; i < sizeof(ops) / sizeof(ops[0]); i++) {
		size_t len = strlen(ops[i].s);

		if (!strncmp(ps->p, ops[i].s, len)) {
			ps->p += len;
			int right = parse_bits(ps);

			if (right < 0)
				return right;
			return node(ps, ops[i].op, left, right, 0);
		}
	}
	if (*ps->p == '=' || *ps->p == '!')
		return fail(ps, "expected one of == != < <= > >=");
	return left;
}

static int parse_binary(struct parser *ps, const char *tok, enum rs_call_op op, int (*sub)(struct parser *))
{
	int left = sub(ps);

	while (left >= 0) {
		skip_space(ps);
		if (strncmp(ps->p, tok, 2))
			break;
		ps->p += 2;
		int right = sub(ps);

		if (right < 0)
			return right;
		left = node(ps, op, left, right, 0);
	}
	return left;
}

static int parse_and(struct parser *ps)
{
	return parse_binary(ps, "&&", RS_CALL_LAND, parse_cmp);
}

static int parse_or(struct parser *ps)
{
	return parse_binary(ps, "||", RS_CALL_LOR, parse_and);
}

int rs_call_parse(const char *spec, struct rs_call_filter *f, char *err, size_t errsz)
{
	struct parser ps = { .s = spec, .p = spec, .f = f, .err = err, .errsz = errsz };
	size_t len = 0;

	memset(f, 0, sizeof(*f));
	f->root = -1;
	skip_space(&ps);
	while (isalnum((unsigned char)ps.p[len]) || ps.p[len] == '_' || ps.p[len] == '.' || ps.p[len] == '@')
		len++;
	if (!len) {
		fail(&ps, "expected a function name");
		return -ps.col;
	}
	if (len > RS_CALL_NAME_MAX) {
		fail(&ps, "function name longer than %d characters", RS_CALL_NAME_MAX);
		return -ps.col;
	}
	memcpy(f->function, ps.p, len);
	ps.p += len;
	skip_space(&ps);
	if (!*ps.p)
		return 0;
	if (strncmp(ps.p, "if", 2) || (ps.p[2] && ps.p[2] != ' ' && ps.p[2] != '\t' && ps.p[2] != '(')) {
		fail(&ps, "expected 'if EXPR' or the end after the function name");
		return -ps.col;
	}
	ps.p += 2;
	f->root = parse_or(&ps);
	if (f->root >= 0) {
		skip_space(&ps);
		if (*ps.p)
			fail(&ps, "expected && || or the end");
	}
	return ps.col ? -ps.col : 0;
}

static int64_t eval(const struct rs_call_filter *f, int i, const uint64_t args[6]);

/* A constant or an argument without a call: most filters compare one with the other. */
static inline int64_t operand(const struct rs_call_filter *f, int i, const uint64_t args[6])
{
	const struct rs_call_node *n = &f->nodes[i];

	if (n->op == RS_CALL_ARG)
		return (int64_t)args[n->value];
	if (n->op == RS_CALL_CONST)
		return n->value;
	return eval(f, i, args);
}

static inline int64_t compare(enum rs_call_op op, int64_t a, int64_t b)
{
	switch (op) {
	case RS_CALL_EQ:
		return a == b;
	case RS_CALL_NE:
		return a != b;
	case RS_CALL_LT:
		return a < b;
	case RS_CALL_LE:
		return a <= b;
	case RS_CALL_GT:
		return a > b;
	case RS_CALL_GE:
		return a >= b;
	default:
		return a & b;
	}
}

static int64_t eval(const struct rs_call_filter *f, int i, const uint64_t args[6])
{
	const struct rs_call_node *n = &f->nodes[i];

	switch (n->op) {
	case RS_CALL_CONST:
	case RS_CALL_ARG:
		return operand(f, i, args);
	case RS_CALL_LAND:
		return operand(f, n->left, args) && operand(f, n->right, args);
	case RS_CALL_LOR:
		return operand(f, n->left, args) || operand(f, n->right, args);
	default:
		return compare(n->op, operand(f, n->left, args), operand(f, n->right, args));
	}
}

int rs_call_match(const struct rs_call_filter *f, const uint64_t args[6])
{
	const struct rs_call_node *n;

	if (f->root < 0)
		return 1;
	/* a comparison at the root, the usual filter: no call, no register saves */
	n = &f->nodes[f->root];
	if (n->op >= RS_CALL_AND_BITS && n->op <= RS_CALL_GE)
		return compare(n->op, operand(f, n->left, args), operand(f, n->right, args)) != 0;
	return eval(f, f->root, args) != 0;
}

// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * One self-contained HTML file with an interactive flame graph, drawn by
 * a script of its own from a JSON block in the page; nothing is loaded
 * from the network.  docs/format.md gives the block's layout: the objects
 * (with their kind: main executable, library, vDSO, kernel, or the
 * pseudo-objects of events and markers), the frames (a function of an
 * object, inlined or not), and the distinct stacks as lists of frames,
 * outermost first under their event, with how many records had each
 * stack with a reliable and with an unreliable verdict.
 *
 * The page, as flamegraph.pl draws one: siblings in name order, a frame's
 * width its share of the samples, colours from flamegraph.pl's palettes
 * (hot for the main executable, a hue family per library, blue for the
 * kernel, greys for events and markers), root at the bottom or (icicle)
 * at the top.  A frame is a box of whole pixels: edges are the rounded
 * running sums of the widths, so neighbours meet and never overlap, and
 * a frame narrower than a pixel is not drawn; a run of such siblings is
 * one grey box if it is a pixel wide.  Labels are cut to fit, with an
 * ellipsis.  The hatched part at a frame's right end is its share of
 * unreliable stacks.  The search counts each stack once, however many of
 * its frames match.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "decode/present.h"
#include "relstack-local.h"

struct html_object {
	char *path;       /* "" for the pseudo-objects */
	const char *kind; /* "main", "library", "vdso", "kernel", "event", "marker" */
};

struct html_frame {
	char *name;
	uint32_t object;
	bool inlined;
};

struct html_stack {
	uint32_t *frame; /* outermost first, the event's frame first of all */
	size_t n;
	uint64_t count[2]; /* reliable, unreliable */
};

struct html {
	struct rs_intern objects, frames, stacks;
	struct html_object *object;
	struct html_frame *frame;
	struct html_stack *stack;
	size_t nobjects, capobjects, nframes, capframes, nstacks, capstacks;
	uint32_t *ids; /* the frame ids of the record being added */
	size_t capids;
	char *key; /* the key being looked up */
	size_t capkey;
	bool oom;
};

/*
 * The array @p of *@cap items of @size, grown to hold @n of them: the
 * array (moved or not), or NULL for no memory (@p is left as it was).
 */
static void *html_grow(void *p, size_t *cap, size_t n, size_t size)
{
	size_t want = *cap ? *cap : 64;

	if (n <= *cap)
		return p;
	while (want < n)
		want *= 2;
	p = realloc(p, want * size);
	if (p)
		*cap = want;
	return p;
}

static int html_init(struct relstack_presenter *p)
{
	p->state = calloc(1, sizeof(struct html));
	return p->state ? 0 : -ENOMEM;
}

static const char *object_kind(const struct relstack_object *o)
{
	if (o->flags & RELSTACK_OBJECT_KERNEL)
		return "kernel";
	if (o->flags & RELSTACK_OBJECT_MAIN)
		return "main";
	if (o->flags & RELSTACK_OBJECT_VDSO)
		return "vdso";
	return "library";
}

/* The key of a frame or an object, "part\npart", in s->key; NULL for no memory. */
static const char *html_key(struct html *s, const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b);
	char *more = html_grow(s->key, &s->capkey, la + lb + 2, 1);

	if (!more) {
		s->oom = true;
		return NULL;
	}
	s->key = more;
	memcpy(s->key, a, la);
	s->key[la] = '\n';
	memcpy(s->key + la + 1, b, lb + 1);
	return s->key;
}

static uint32_t object_id(struct html *s, const char *kind, const char *path)
{
	const char *key = html_key(s, kind, path);
	struct html_object *more;
	bool added;
	uint64_t id;

	if (!key)
		return 0;
	id = rs_intern(&s->objects, key, s->nobjects, &added, &s->oom);
	if (!added || s->oom)
		return (uint32_t)id;
	more = html_grow(s->object, &s->capobjects, s->nobjects + 1, sizeof(*more));
	if (more)
		s->object = more;
	if (!more || !(s->object[s->nobjects].path = strdup(path))) {
		s->oom = true;
		return 0;
	}
	s->object[s->nobjects].kind = kind;
	return (uint32_t)s->nobjects++;
}

static uint32_t frame_id(struct html *s, const char *name, uint32_t object, bool inlined)
{
	struct html_frame *more;
	char tag[32];
	const char *key;
	bool added;
	uint64_t id;

	snprintf(tag, sizeof(tag), "%u %d", object, inlined);
	key = html_key(s, tag, name);
	if (!key)
		return 0;
	id = rs_intern(&s->frames, key, s->nframes, &added, &s->oom);
	if (!added || s->oom)
		return (uint32_t)id;
	more = html_grow(s->frame, &s->capframes, s->nframes + 1, sizeof(*more));
	if (more)
		s->frame = more;
	if (!more || !(s->frame[s->nframes].name = strdup(name))) {
		s->oom = true;
		return 0;
	}
	s->frame[s->nframes].object = object;
	s->frame[s->nframes].inlined = inlined;
	return (uint32_t)s->nframes++;
}

/* Room for @n frame ids of the record being added: false for no memory. */
static bool ids_reserve(struct html *s, size_t n)
{
	uint32_t *more = html_grow(s->ids, &s->capids, n, sizeof(*more));

	if (more)
		s->ids = more;
	return more != NULL;
}

/* The stack of frame ids s->ids[0..@n) counted once more: 0 or -ENOMEM. */
static int stack_add(struct html *s, size_t n, bool reliable)
{
	struct html_stack *st;
	size_t len = 0;
	char *key;
	bool added;
	uint64_t id;

	/* the stack's key: its frame ids in decimal */
	key = html_grow(s->key, &s->capkey, n * 11 + 1, 1);
	if (!key)
		return -ENOMEM;
	s->key = key;
	key[0] = 0;
	for (size_t i = 0; i < n; i++)
		len += (size_t)snprintf(key + len, s->capkey - len, "%u,", s->ids[i]);
	id = rs_intern(&s->stacks, key, s->nstacks, &added, &s->oom);
	if (s->oom)
		return -ENOMEM;
	if (added) {
		st = html_grow(s->stack, &s->capstacks, s->nstacks + 1, sizeof(*st));
		if (!st)
			return -ENOMEM;
		s->stack = st;
		st = &s->stack[s->nstacks];
		st->frame = malloc(n * sizeof(*st->frame));
		if (!st->frame)
			return -ENOMEM;
		memcpy(st->frame, s->ids, n * sizeof(*st->frame));
		st->n = n;
		st->count[0] = st->count[1] = 0;
		s->nstacks++;
	}
	s->stack[id].count[reliable ? 0 : 1]++;
	return 0;
}

static int html_record(struct relstack_presenter *p, const struct relstack_decoded_record *dr)
{
	struct html *s = p->state;
	size_t n = 0;

	if (!dr->rec->has_stack)
		return 0;
	if (!ids_reserve(s, 1))
		return -ENOMEM;
	s->ids[n++] = frame_id(s, dr->event, object_id(s, "event", ""), false);
	for (size_t i = dr->nframes; i-- > 0;) {
		const struct relstack_decoded_frame *fr = &dr->frames[i];
		struct rs_func fn[RS_FUNC_MAX];
		char name[4200];
		unsigned nf = rs_frame_funcs(fr, fn, name, sizeof(name));
		uint32_t object;

		if (!nf)
			continue;
		if (fr->kind == RELSTACK_ENTRY_OBJECT)
			object = object_id(s, object_kind(fr->object), fr->object->path);
		else
			object = object_id(s, "marker", "");
		if (!ids_reserve(s, n + nf))
			return -ENOMEM;
		for (unsigned k = 0; k < nf; k++)
			s->ids[n++] = frame_id(s, fn[k].name, object, fn[k].inlined);
	}
	return s->oom ? -ENOMEM : stack_add(s, n, dr->reliable);
}

/* A JSON string that cannot end the <script> element it is in. */
static void html_json_string(FILE *f, const char *str, size_t len)
{
	char *buf = NULL;
	size_t size = 0;
	FILE *m = open_memstream(&buf, &size);
	char *s0 = strndup(str, len);

	if (!m || !s0) {
		if (m)
			fclose(m);
		free(buf);
		free(s0);
		fputs("\"\"", f);
		return;
	}
	rs_print_string(m, s0, SIZE_MAX, true);
	fclose(m);
	for (size_t i = 0; i < size; i++) {
		if (buf[i] == '<')
			fputs("\\u003c", f);
		else
			fputc(buf[i], f);
	}
	free(buf);
	free(s0);
}

static const char page_head[] =
	"<!DOCTYPE html>\n"
	"<html><head><meta charset=\"utf-8\">\n"
	"<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline';"
	" script-src 'unsafe-inline'\">\n"
	"<title>relstack flame graph</title>\n"
	"<style>\n"
	"body{font:12px sans-serif;margin:8px;color:#222;background:#fff}\n"
	"h1{font-size:16px;margin:0 0 6px}\n"
	"#bar,#legend{display:flex;flex-wrap:wrap;align-items:center;gap:4px 14px;margin:4px 0}\n"
	"#legend{color:#444}\n"
	".s{display:inline-block;width:12px;height:12px;margin-right:4px;vertical-align:-2px;"
	"box-sizing:border-box;border:1px solid rgba(0,0,0,.25)}\n"
	"#help{margin:4px 0;color:#555}\n"
	"#info{margin:4px 0;min-height:16px;white-space:nowrap;overflow:hidden;text-overflow:ellipsis}\n"
	"#g{position:relative;width:100%;overflow:hidden}\n"
	".f{position:absolute;height:16px;box-sizing:border-box;overflow:hidden;white-space:nowrap;"
	"cursor:pointer;font:12px sans-serif;line-height:16px;background:var(--c)}\n"
	".f.w{border-right:1px solid #fff}\n"
	".f.a{opacity:.65}\n"
	".f:hover{filter:brightness(1.12)}\n"
	".l{position:relative;padding-left:3px;text-shadow:0 0 2px var(--c),0 0 2px var(--c),0 0 1px var(--c)}\n"
	".h,.s.h{position:absolute;top:0;right:0;bottom:0;"
	"background:repeating-linear-gradient(135deg,rgba(100,0,0,.5) 0 2px,transparent 2px 6px)}\n"
	".s.h{position:static;background-color:#eee}\n"
	".f.g:not(.m),.s.g{background:repeating-linear-gradient(90deg,#999 0 1px,#e2e2e2 1px 3px)}\n"
	"</style></head><body>\n"
	"<h1>relstack flame graph: ";

static const char page_body[] =
	"</h1>\n"
	"<div id=\"bar\"><input id=\"search\" placeholder=\"search\" size=\"30\"> <span id=\"matched\"></span>\n"
	"<button id=\"reset\" disabled>reset zoom</button>\n"
	"<label><input type=\"checkbox\" id=\"orientation\"> icicle (root at the top)</label></div>\n"
	"<div id=\"legend\"></div>\n"
	"<div id=\"help\">The width of a frame is its share of the samples; siblings are in name order.\n"
	"Click a frame to zoom to it, the zoomed frame or a caller's row to zoom out.\n"
	"The hatched part at a frame's right end is its share of unreliable stacks.</div>\n"
	"<div id=\"info\"></div>\n"
	"<div id=\"g\"></div>\n"
	"<script type=\"application/json\" id=\"stacks\">\n";

/* The script, in parts of less than the 4095 characters a C compiler must take in a literal. */
static const char *const page_script[] = {
	"<script>\n"
	"'use strict';\n"
	"const data = JSON.parse(document.getElementById('stacks').textContent);\n"
	"const ROW = 17, PAD = 5, MATCH = 'rgb(230,0,230)';\n"
	"const g = document.getElementById('g'), info = document.getElementById('info');\n"
	"const search = document.getElementById('search'), reset = document.getElementById('reset');\n"
	"const orientation = document.getElementById('orientation');\n"
	"\n",
	"/* the call tree: one node per frame under its caller, siblings in name order */\n"
	"function node(frame, parent) {\n"
	"  return {frame: frame, parent: parent, depth: parent ? parent.depth + 1 : 0, total: 0, unreliable: 0,\n"
	"          kids: new Map(), list: []};\n"
	"}\n"
	"const root = node(-1, null);\n"
	"for (const [ids, reliable, unreliable] of data.stacks) {\n"
	"  let n = root;\n"
	"  n.total += reliable + unreliable;\n"
	"  n.unreliable += unreliable;\n"
	"  for (const id of ids) {\n"
	"    let k = n.kids.get(id);\n"
	"    if (!k) {\n"
	"      k = node(id, n);\n"
	"      n.kids.set(id, k);\n"
	"    }\n"
	"    k.total += reliable + unreliable;\n"
	"    k.unreliable += unreliable;\n"
	"    n = k;\n"
	"  }\n"
	"}\n"
	"function name(n) { return n.frame < 0 ? 'all' : data.frames[n.frame][0]; }\n"
	"function byName(a, b) {\n"
	"  const x = name(a), y = name(b);\n"
	"  return x < y ? -1 : x > y ? 1 : a.frame - b.frame;\n"
	"}\n"
	"for (const todo = [root]; todo.length;) {\n"
	"  const n = todo.pop();\n"
	"  n.list = [...n.kids.values()].sort(byName);\n"
	"  for (const k of n.list)\n"
	"    todo.push(k);\n"
	"}\n"
	"\n",
	"/* flamegraph.pl's palettes: per channel [base, range, i], the value base + range * v[i], v from\n"
	"   the name; the main executable's is hot, each library's one of LIBRARIES, the kernel's blue */\n"
	"const PALETTE = {\n"
	"  hot: [[205, 50, 2], [0, 230, 0], [0, 55, 1]],\n"
	"  aqua: [[50, 60, 0], [165, 55, 0], [165, 55, 0]],\n"
	"  green: [[50, 60, 0], [200, 55, 0], [50, 60, 0]],\n"
	"  yellow: [[175, 55, 0], [175, 55, 0], [50, 20, 0]],\n"
	"  purple: [[190, 65, 0], [80, 60, 0], [190, 65, 0]],\n"
	"  blue: [[80, 60, 0], [80, 60, 0], [205, 50, 0]],\n"
	"  grey: [[200, 25, 0], [200, 25, 0], [190, 25, 0]],\n"
	"  dark: [[130, 30, 0], [130, 30, 0], [140, 30, 0]],\n"
	"};\n"
	"const LIBRARIES = ['aqua', 'green', 'yellow', 'purple'];\n"
	"const KINDS = {main: 'hot', kernel: 'blue', event: 'grey', marker: 'dark'};\n"
	"function base(path) { return path.slice(path.lastIndexOf('/') + 1); }\n"
	"const family = data.objects.map(o => KINDS[o[1]]);\n"
	"function byBase(a, b) {\n"
	"  const x = base(data.objects[a][0]), y = base(data.objects[b][0]);\n"
	"  return x < y ? -1 : x > y ? 1 : a - b;\n"
	"}\n"
	"data.objects.map((o, i) => i).filter(i => !family[i]).sort(byBase)\n"
	"  .forEach((i, k) => { family[i] = LIBRARIES[k % LIBRARIES.length]; });\n"
	"function hash(s, seed) {\n"
	"  let h = 2166136261 ^ seed;\n"
	"  for (let i = 0; i < s.length; i++)\n"
	"    h = Math.imul(h ^ s.charCodeAt(i), 16777619);\n"
	"  return (h >>> 0) / 4294967296;\n"
	"}\n"
	"function rgb(palette, v) {\n"
	"  return 'rgb(' + PALETTE[palette].map(([b, r, i]) => Math.round(b + r * v[i])).join(',') + ')';\n"
	"}\n"
	"function colour(n) {\n"
	"  if (n.frame < 0)\n"
	"    return rgb('grey', [.5]);\n"
	"  const s = data.frames[n.frame][0];\n"
	"  return rgb(family[data.frames[n.frame][1]], [hash(s, 1), hash(s, 2), hash(s, 3)]);\n"
	"}\n"
	"\n",
	"function swatch(text, fill, cls) {\n"
	"  const e = document.createElement('span'), s = document.createElement('span');\n"
	"  s.className = 's ' + (cls || '');\n"
	"  if (fill)\n"
	"    s.style.background = fill;\n"
	"  e.append(s, text);\n"
	"  document.getElementById('legend').append(e);\n"
	"}\n"
	"{\n"
	"  const kinds = new Set(data.objects.map(o => o[1]));\n"
	"  data.objects.forEach(([path, kind], i) => {\n"
	"    if (kind === 'main' || kind === 'library' || kind === 'vdso')\n"
	"      swatch(base(path) + (kind === 'main' ? ' (main executable)' : ''), rgb(family[i], [.5, .5, .5]));\n"
	"  });\n"
	"  if (kinds.has('kernel'))\n"
	"    swatch('kernel', rgb('blue', [.5]));\n"
	"  swatch('events', rgb('grey', [.5]));\n"
	"  if (kinds.has('marker'))\n"
	"    swatch('markers', rgb('dark', [.5]));\n"
	"  swatch('frames narrower than a pixel', null, 'g');\n"
	"  swatch('unreliable share', null, 'h');\n"
	"  swatch('search match', MATCH);\n"
	"}\n"
	"\n",
	"/* labels cut to fit end with an ellipsis */\n"
	"const ctx = document.createElement('canvas').getContext('2d');\n"
	"ctx.font = '12px sans-serif';\n"
	"const widths = new Map();\n"
	"function textWidth(s) {\n"
	"  let w = widths.get(s);\n"
	"  if (w === undefined) {\n"
	"    w = ctx.measureText(s).width;\n"
	"    widths.set(s, w);\n"
	"  }\n"
	"  return w;\n"
	"}\n"
	"function fit(s, room) {\n"
	"  if (textWidth(s) <= room)\n"
	"    return s;\n"
	"  const cs = Array.from(s);\n"
	"  let lo = 0, hi = cs.length - 1;\n"
	"  while (lo < hi) {\n"
	"    const mid = (lo + hi + 1) >> 1;\n"
	"    if (ctx.measureText(cs.slice(0, mid).join('') + '\\u2026').width <= room)\n"
	"      lo = mid;\n"
	"    else\n"
	"      hi = mid - 1;\n"
	"  }\n"
	"  return lo >= 2 ? cs.slice(0, lo).join('') + '\\u2026' : '';\n"
	"}\n"
	"\n",
	"let zoomed = root;\n"
	"function pct(a, b) { return (b ? 100 * a / b : 0).toFixed(2) + '%'; }\n"
	"function share(total, depth) {\n"
	"  let s = total + ' samples, ' + pct(total, root.total) + ' of all';\n"
	"  if (zoomed !== root && depth > zoomed.depth)\n"
	"    s += ', ' + pct(total, zoomed.total) + ' of ' + name(zoomed);\n"
	"  return s;\n"
	"}\n"
	"function tip(n) {\n"
	"  const lines = [name(n)];\n"
	"  if (n.frame >= 0) {\n"
	"    const [, object, inlined] = data.frames[n.frame], [path, kind] = data.objects[object];\n"
	"    if (inlined)\n"
	"      lines[0] += ' (inlined)';\n"
	"    lines.push(kind === 'event' || kind === 'marker' ? kind :\n"
	"               path + (kind === 'main' ? ' (main executable)' : kind === 'kernel' ? ' (kernel)' : ''));\n"
	"  }\n"
	"  lines.push(share(n.total, n.depth));\n"
	"  if (n.unreliable)\n"
	"    lines.push(n.unreliable + ' unreliable (' + pct(n.unreliable, n.total) + ', hatched)');\n"
	"  return lines.join('\\n');\n"
	"}\n"
	"function groupTip(run) {\n"
	"  const lines = [run.count + ' frames narrower than a pixel', share(run.total, run.parent.depth + 1)];\n"
	"  if (run.unreliable)\n"
	"    lines.push(run.unreliable + ' unreliable (' + pct(run.unreliable, run.total) + ', hatched)');\n"
	"  return lines.join('\\n');\n"
	"}\n"
	"\n",
	"/* the boxes to draw at @width px, in whole pixels: their edges are the rounded running sums of the\n"
	"   widths, a frame narrower than a pixel is left out, and a run of such siblings is one box */\n"
	"function layout(width, hit) {\n"
	"  const boxes = [];\n"
	"  function merged(run, end) {\n"
	"    if (end - run.x >= 1)\n"
	"      boxes.push({group: run, l: Math.round(run.x), r: Math.round(end), d: run.parent.depth + 1,\n"
	"                  marked: hit && run.frames.some(id => hit[id])});\n"
	"  }\n"
	"  function place(n, x, w) {\n"
	"    boxes.push({node: n, l: Math.round(x), r: Math.round(x + w), d: n.depth,\n"
	"                marked: hit && hit[n.frame]});\n"
	"    let cx = x, run = null;\n"
	"    for (const k of n.list) {\n"
	"      const kw = w * k.total / n.total;\n"
	"      if (kw < 1) {\n"
	"        if (!run)\n"
	"          run = {parent: n, x: cx, count: 0, total: 0, unreliable: 0, frames: []};\n"
	"        run.count++;\n"
	"        run.total += k.total;\n"
	"        run.unreliable += k.unreliable;\n"
	"        run.frames.push(k.frame);\n"
	"      } else {\n"
	"        if (run)\n"
	"          merged(run, cx);\n"
	"        run = null;\n"
	"        place(k, cx, kw);\n"
	"      }\n"
	"      cx += kw;\n"
	"    }\n"
	"    if (run)\n"
	"      merged(run, cx);\n"
	"  }\n"
	"  for (let a = zoomed.parent; a; a = a.parent)\n"
	"    boxes.unshift({node: a, l: 0, r: width, d: a.depth, ancestor: true, marked: hit && hit[a.frame]});\n"
	"  place(zoomed, 0, width);\n"
	"  return boxes;\n"
	"}\n"
	"\n",
	"/* box @b as an element, in row @row of the graph (counted from the top) */\n"
	"function element(b, row) {\n"
	"  const e = document.createElement('div'), n = b.node, w = b.r - b.l, inner = w >= 3 ? w - 1 : w;\n"
	"  const total = n ? n.total : b.group.total, unreliable = n ? n.unreliable : b.group.unreliable;\n"
	"  e.className = 'f' + (w >= 3 ? ' w' : '') + (b.ancestor ? ' a' : '') + (n ? '' : ' g') +\n"
	"    (b.marked ? ' m' : '');\n"
	"  e.style.left = b.l + 'px';\n"
	"  e.style.width = w + 'px';\n"
	"  e.style.top = row * ROW + 'px';\n"
	"  e.style.setProperty('--c', b.marked ? MATCH : n ? colour(n) : '#e2e2e2');\n"
	"  if (unreliable) {\n"
	"    const h = document.createElement('div');\n"
	"    h.className = 'h';\n"
	"    h.style.width = Math.max(1, Math.round(inner * unreliable / total)) + 'px';\n"
	"    e.append(h);\n"
	"  }\n"
	"  const text = fit(n ? name(n) : b.group.count + ' frames', inner - PAD);\n"
	"  if (text) {\n"
	"    const l = document.createElement('span');\n"
	"    l.className = 'l';\n"
	"    l.textContent = text;\n"
	"    e.append(l);\n"
	"  }\n"
	"  if (n)\n"
	"    e.dataset.name = name(n);\n"
	"  e.title = n ? tip(n) : groupTip(b.group);\n"
	"  e.node = n;\n"
	"  e.group = b.group;\n"
	"  return e;\n"
	"}\n"
	"\n",
	"function draw() {\n"
	"  const term = search.value, hit = term ? data.frames.map(f => f[0].includes(term)) : null;\n"
	"  let matched = 0, deepest = 0;\n"
	"  if (hit)\n"
	"    for (const [ids, reliable, unreliable] of data.stacks)\n"
	"      if (ids.some(id => hit[id]))\n"
	"        matched += reliable + unreliable;\n"
	"  document.getElementById('matched').textContent = term ?\n"
	"    'matched: ' + matched + ' of ' + root.total + ' samples (' + pct(matched, root.total) + ')' : '';\n"
	"  reset.disabled = zoomed === root;\n"
	"  g.textContent = '';\n"
	"  if (!root.total) {\n"
	"    g.textContent = 'No stacks.';\n"
	"    return;\n"
	"  }\n"
	"  const boxes = layout(g.clientWidth || 1000, hit), frag = document.createDocumentFragment();\n"
	"  for (const b of boxes)\n"
	"    deepest = Math.max(deepest, b.d);\n"
	"  for (const b of boxes)\n"
	"    frag.append(element(b, orientation.checked ? b.d : deepest - b.d));\n"
	"  g.append(frag);\n"
	"  g.style.height = (deepest + 1) * ROW + 'px';\n"
	"}\n"
	"function zoom(n) {\n"
	"  zoomed = n;\n"
	"  draw();\n"
	"}\n"
	"g.onclick = function (ev) {\n"
	"  const e = ev.target.closest('.f');\n"
	"  if (e)\n"
	"    zoom(e.node ? (e.node === zoomed && e.node.parent ? e.node.parent : e.node) : e.group.parent);\n"
	"};\n"
	"g.onmouseover = function (ev) {\n"
	"  const e = ev.target.closest('.f');\n"
	"  if (e)\n"
	"    info.textContent = e.title.split('\\n').join(' \\u00b7 ');\n"
	"};\n"
	"/* a flame graph taller than the window shows its root first */\n"
	"function showRoot() {\n"
	"  const bottom = g.getBoundingClientRect().bottom;\n"
	"  if (!orientation.checked && bottom > window.innerHeight)\n"
	"    window.scrollBy(0, bottom - window.innerHeight + 8);\n"
	"}\n"
	"reset.onclick = function () { zoom(root); };\n"
	"orientation.checked = location.hash === '#icicle';\n"
	"orientation.onchange = function () {\n"
	"  try {\n"
	"    history.replaceState(null, '', orientation.checked ? '#icicle' : '#flame');\n"
	"  } catch (e) {\n"
	"    /* a page whose address cannot change keeps the orientation until it is reloaded */\n"
	"  }\n"
	"  draw();\n"
	"  showRoot();\n"
	"};\n"
	"search.oninput = draw;\n"
	"window.onresize = draw;\n"
	"draw();\n"
	"showRoot();\n"
	"</script>\n"
	"</body></html>\n",
};

static int html_finish(struct relstack_presenter *p)
{
	struct html *s = p->state;
	FILE *f = p->f;
	const char *title = p->o.title ? p->o.title : p->has_run ? p->run.comm : "relstack";
	char *t = strndup(title, 256);

	if (!t)
		return -ENOMEM;
	fputs(page_head, f);
	for (const char *c = t; *c; c++) {
		if (*c == '<')
			fputs("&lt;", f);
		else if (*c == '&')
			fputs("&amp;", f);
		else
			fputc(*c, f);
	}
	free(t);
	fputs(page_body, f);
	fputs("{\"objects\":[", f);
	for (size_t i = 0; i < s->nobjects; i++) {
		fprintf(f, "%s\n[", i ? "," : "");
		html_json_string(f, s->object[i].path, strlen(s->object[i].path));
		fprintf(f, ",\"%s\"]", s->object[i].kind);
	}
	fputs("],\n\"frames\":[", f);
	for (size_t i = 0; i < s->nframes; i++) {
		fprintf(f, "%s\n[", i ? "," : "");
		html_json_string(f, s->frame[i].name, strlen(s->frame[i].name));
		fprintf(f, ",%u,%d]", s->frame[i].object, s->frame[i].inlined);
	}
	fputs("],\n\"stacks\":[", f);
	for (size_t i = 0; i < s->nstacks; i++) {
		fputs(i ? ",\n[[" : "\n[[", f);
		for (size_t k = 0; k < s->stack[i].n; k++)
			fprintf(f, "%s%u", k ? "," : "", s->stack[i].frame[k]);
		fprintf(f, "],%llu,%llu]", (unsigned long long)s->stack[i].count[0],
			(unsigned long long)s->stack[i].count[1]);
	}
	fputs("]}</script>\n", f);
	for (size_t i = 0; i < RS_ARRAY_SIZE(page_script); i++)
		fputs(page_script[i], f);
	return 0;
}

static void html_free(struct relstack_presenter *p)
{
	struct html *s = p->state;

	if (!s)
		return;
	rs_intern_free(&s->objects);
	rs_intern_free(&s->frames);
	rs_intern_free(&s->stacks);
	for (size_t i = 0; i < s->nobjects; i++)
		free(s->object[i].path);
	for (size_t i = 0; i < s->nframes; i++)
		free(s->frame[i].name);
	for (size_t i = 0; i < s->nstacks; i++)
		free(s->stack[i].frame);
	free(s->object);
	free(s->frame);
	free(s->stack);
	free(s->ids);
	free(s->key);
	free(s);
}

const struct rs_presenter_ops rs_present_html = {
	.init = html_init, .record = html_record, .finish = html_finish, .free = html_free,
};

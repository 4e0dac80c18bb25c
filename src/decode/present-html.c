// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * One self-contained HTML file with an interactive flame graph: the
 * stacks, counted like the folded format (with how many of each were
 * unreliable), are a JSON block in the page, and a script of its own
 * draws them.  Nothing is loaded from the network.  A click on a frame
 * zooms to it, a click on the root zooms out; the search box marks the
 * frames whose name contains the text; a frame that holds unreliable
 * stacks is hatched and its tooltip gives both counts.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "decode/present.h"

struct html {
	struct rs_intern stacks;
	char **line;
	uint64_t (*count)[2]; /* reliable, unreliable */
	size_t n, cap;
	bool oom;
};

static int html_init(struct relstack_presenter *p)
{
	p->state = calloc(1, sizeof(struct html));
	return p->state ? 0 : -ENOMEM;
}

static int html_record(struct relstack_presenter *p, const struct relstack_decoded_record *dr)
{
	struct html *s = p->state;
	char *line;
	bool added;
	uint64_t id;

	if (!dr->rec->has_stack)
		return 0;
	line = rs_folded_line(dr);
	if (!line)
		return -ENOMEM;
	id = rs_intern(&s->stacks, line, s->n, &added, &s->oom);
	if (added) {
		if (s->n == s->cap) {
			size_t cap = s->cap ? 2 * s->cap : 256;
			char **ml = realloc(s->line, cap * sizeof(*ml));
			uint64_t(*mc)[2];

			if (ml)
				s->line = ml;
			mc = ml ? realloc(s->count, cap * sizeof(*mc)) : NULL;
			if (!mc) {
				free(line);
				return -ENOMEM;
			}
			s->count = mc;
			s->cap = cap;
		}
		s->line[s->n] = line;
		s->count[s->n][0] = s->count[s->n][1] = 0;
		s->n++;
	} else {
		free(line);
	}
	s->count[id][dr->reliable ? 0 : 1]++;
	return s->oom ? -ENOMEM : 0;
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
	"<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\">\n"
	"<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'; "
	"script-src 'unsafe-inline'\">\n<title>relstack flame graph</title>\n<style>\n"
	"body{font:12px sans-serif;margin:8px}#g{position:relative;width:100%}\n"
	".f{position:absolute;height:17px;box-sizing:border-box;border:1px solid #fff;overflow:hidden;"
	"white-space:nowrap;cursor:pointer;background:#f0a060;padding:1px 2px}\n"
	".f.u{background:repeating-linear-gradient(45deg,#f0a060,#f0a060 4px,#d05050 4px,#d05050 8px)}\n"
	".f.m{background:#c070ff}#info{margin:6px 0;min-height:1.2em}\n"
	"</style></head><body>\n<h1 style=\"font-size:16px\">relstack flame graph: ";

static const char page_script[] =
	"<script>\n"
	"'use strict';\n"
	"const data=JSON.parse(document.getElementById('stacks').textContent);\n"
	"function node(name){return {name:name,total:0,unreliable:0,kids:new Map(),parent:null};}\n"
	"const root=node('all');\n"
	"for(const [stack,rel,unrel] of data){let n=root;n.total+=rel+unrel;n.unreliable+=unrel;\n"
	" for(const name of stack.split(';')){let k=n.kids.get(name);if(!k){k=node(name);k.parent=n;n.kids.set(name,k);}\n"
	"  k.total+=rel+unrel;k.unreliable+=unrel;n=k;}}\n"
	"const g=document.getElementById('g'),info=document.getElementById('info'),"
	"search=document.getElementById('search');\n"
	"let zoomed=root;\n"
	"function label(n){return n.name+' ('+n.total+' records, '+(n.total-n.unreliable)+' reliable, '+"
	"n.unreliable+' unreliable)';}\n"
	"function draw(){g.textContent='';const width=g.clientWidth||1000;let depth=0;\n"
	" const term=search.value;let matched=0;\n"
	" function put(n,x,w,d){if(w<1)return;depth=Math.max(depth,d);const e=document.createElement('div');\n"
	"  e.className='f'+(n.unreliable?' u':'')+(term&&n.name.includes(term)?' m':'');\n"
	"  if(term&&n.name.includes(term))matched+=n.total;\n"
	"  e.style.left=x+'px';e.style.width=w+'px';e.style.top=(d*18)+'px';e.textContent=n.name;e.title=label(n);\n"
	"  e.dataset.name=n.name;e.onclick=function(){zoomed=(n===zoomed&&n.parent)?n.parent:n;draw();};\n"
	"  e.onmouseover=function(){info.textContent=label(n);};g.appendChild(e);\n"
	"  let cx=x;for(const k of n.kids.values()){const kw=w*k.total/n.total;put(k,cx,kw,d+1);cx+=kw;}}\n"
	" let d=0;for(let a=zoomed.parent;a;a=a.parent)d++;\n"
	" for(let a=zoomed.parent,i=d-1;a;a=a.parent,i--){const e=document.createElement('div');e.className='f';\n"
	"  e.style.left='0px';e.style.width=width+'px';e.style.top=(i*18)+'px';e.style.opacity='0.5';"
	"e.textContent=a.name;\n"
	"  const t=a;e.onclick=function(){zoomed=t;draw();};g.appendChild(e);}\n"
	" put(zoomed,0,width,d);g.style.height=((depth+1)*18)+'px';\n"
	" document.getElementById('matched').textContent=term?('matched: '+matched+' of '+root.total):'';}\n"
	"search.oninput=draw;window.onresize=draw;draw();\n"
	"</script>\n</body></html>\n";

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
	fputs("</h1>\n<p>Click a frame to zoom, the frame above it (or the root) to zoom out. Hatched frames hold "
	      "unreliable stacks. <input id=\"search\" placeholder=\"search\"> <span id=\"matched\"></span></p>\n"
	      "<div id=\"info\"></div>\n<div id=\"g\"></div>\n<script type=\"application/json\" id=\"stacks\">[",
	      f);
	for (size_t i = 0; i < s->n; i++) {
		fprintf(f, "%s[", i ? ",\n" : "\n");
		html_json_string(f, s->line[i], strlen(s->line[i]));
		fprintf(f, ",%llu,%llu]", (unsigned long long)s->count[i][0], (unsigned long long)s->count[i][1]);
	}
	fputs("]</script>\n", f);
	fputs(page_script, f);
	return 0;
}

static void html_free(struct relstack_presenter *p)
{
	struct html *s = p->state;

	if (!s)
		return;
	rs_intern_free(&s->stacks);
	for (size_t i = 0; i < s->n; i++)
		free(s->line[i]);
	free(s->line);
	free(s->count);
	free(s);
}

const struct rs_presenter_ops rs_present_html = {
	.init = html_init, .record = html_record, .finish = html_finish, .free = html_free,
};

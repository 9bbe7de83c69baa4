// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Flame graph tree, folded output and SVG renderer (see flame.h). Children
 * are kept in insertion order and sorted by name on output, like
 * flamegraph.pl, so output is stable. The SVG is plain: one <g> per frame
 * with a <title> (name, weight, share) for hovering, and a small script for
 * search (highlights matching frames and shows their share).
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "flame.h"
#include "grow.h"

struct node {
	const char *name; /* interned: one copy per distinct frame name */
	uint64_t self, total;
	uint64_t hash; /* of (parent, name): the key in the child table */
	const struct node *parent;
	struct node **kids;
	size_t nkids, capkids;
};

/* Children are found through one open-addressing table keyed by (parent,
 * name): a node of a random-ish profile can have tens of thousands of
 * children, and a linear scan per frame per sample was the slow part. */
struct ls_flame {
	struct node root;
	struct node **tab;
	size_t ntab, captab; /* captab: a power of two */
	/* frame names, each stored once (a profile repeats few names in many
	 * nodes): an open-addressing set */
	char **names;
	size_t nnames, capnames;
};

struct ls_flame *ls_flame_new(void)
{
	struct ls_flame *f = calloc(1, sizeof(*f));

	if (f)
		f->root.name = "all";
	return f;
}

/* Frame names are stored with ';' and line breaks replaced (they would
 * break the folded format); lookups compare as if replaced. */
static char cleaned(char c)
{
	return c == ';' || c == '\n' || c == '\r' ? '_' : c;
}

static const char *or_unknown(const char *s)
{
	return s && s[0] ? s : "[unknown]";
}

static uint64_t key_hash(const struct node *parent, const char *name)
{
	uint64_t h = 1469598103934665603ull ^ (uint64_t)(uintptr_t)parent;

	for (const char *p = name; *p; p++)
		h = (h ^ (unsigned char)cleaned(*p)) * 1099511628211ull;
	return h ^ (h >> 29);
}

static bool same_name(const char *stored, const char *name)
{
	for (; *stored && *name; stored++, name++)
		if (*stored != cleaned(*name))
			return false;
	return *stored == *name;
}

static uint64_t name_hash(const char *name)
{
	return key_hash(NULL, name);
}

static void names_put(char **v, size_t cap, char *name)
{
	size_t i = name_hash(name) & (cap - 1);

	while (v[i])
		i = (i + 1) & (cap - 1);
	v[i] = name;
}

/* The stored (cleaned) copy of name, made on first use. */
static const char *intern(struct ls_flame *f, const char *name)
{
	size_t i;
	char *c;

	if (f->capnames) {
		for (i = name_hash(name) & (f->capnames - 1); f->names[i];
		     i = (i + 1) & (f->capnames - 1))
			if (same_name(f->names[i], name))
				return f->names[i];
	}
	if (2 * (f->nnames + 1) > f->capnames) {
		size_t cap = f->capnames ? 2 * f->capnames : 1024;
		char **v = calloc(cap, sizeof(*v));
		if (!v)
			abort();
		for (size_t j = 0; j < f->capnames; j++)
			if (f->names[j])
				names_put(v, cap, f->names[j]);
		free(f->names);
		f->names = v;
		f->capnames = cap;
	}
	if (!(c = strdup(name)))
		abort();
	for (char *p = c; *p; p++)
		*p = cleaned(*p);
	names_put(f->names, f->capnames, c);
	f->nnames++;
	return c;
}

static void tab_put(struct ls_flame *f, struct node *k)
{
	size_t i = k->hash & (f->captab - 1);

	while (f->tab[i])
		i = (i + 1) & (f->captab - 1);
	f->tab[i] = k;
	f->ntab++;
}

static struct node *child(struct ls_flame *f, struct node *n, const char *name)
{
	uint64_t h;
	size_t i;
	struct node *k;

	name = or_unknown(name);
	h = key_hash(n, name);
	if (f->captab) {
		for (i = h & (f->captab - 1); (k = f->tab[i]); i = (i + 1) & (f->captab - 1))
			if (k->hash == h && k->parent == n && same_name(k->name, name))
				return k;
	}
	if (2 * (f->ntab + 1) > f->captab) { /* keep the load under a half */
		struct node **old = f->tab;
		size_t oldcap = f->captab;

		f->captab = oldcap ? 2 * oldcap : 1024;
		f->tab = calloc(f->captab, sizeof(*f->tab));
		if (!f->tab)
			abort();
		f->ntab = 0;
		for (size_t j = 0; j < oldcap; j++)
			if (old[j])
				tab_put(f, old[j]);
		free(old);
	}
	k = calloc(1, sizeof(*k));
	if (!k)
		abort();
	k->name = intern(f, name);
	k->hash = h;
	k->parent = n;
	GROW(n->kids, n->nkids, n->capkids);
	n->kids[n->nkids++] = k;
	tab_put(f, k);
	return k;
}

void ls_flame_add(struct ls_flame *f, const char *const *frames, int n, uint64_t weight)
{
	struct node *cur = &f->root;

	if (!weight)
		return;
	cur->total += weight;
	for (int i = 0; i < n; i++) {
		cur = child(f, cur, frames[i]);
		cur->total += weight;
	}
	cur->self += weight;
}

uint64_t ls_flame_total(const struct ls_flame *f)
{
	return f->root.total;
}

static int by_name(const void *a, const void *b)
{
	return strcmp((*(struct node *const *)a)->name, (*(struct node *const *)b)->name);
}

static void sort_tree(struct node *n)
{
	if (n->nkids > 1)
		qsort(n->kids, n->nkids, sizeof(*n->kids), by_name);
	for (size_t i = 0; i < n->nkids; i++)
		sort_tree(n->kids[i]);
}

static void folded(const struct node *n, char *path, size_t len, size_t cap, FILE *out)
{
	size_t l = strlen(n->name);

	if (len + l + 2 >= cap)
		return;
	if (len)
		path[len++] = ';';
	memcpy(path + len, n->name, l + 1);
	len += l;
	if (n->self)
		fprintf(out, "%s %llu\n", path, (unsigned long long)n->self);
	for (size_t i = 0; i < n->nkids; i++)
		folded(n->kids[i], path, len, cap, out);
}

void ls_flame_folded(struct ls_flame *f, FILE *out)
{
	char path[65536];

	sort_tree(&f->root);
	for (size_t i = 0; i < f->root.nkids; i++) {
		path[0] = '\0';
		folded(f->root.kids[i], path, 0, sizeof(path), out);
	}
}

/* ---- SVG ---- */

#define SVG_W 1200
#define FRAME_H 16
#define PAD 10

/* Bytes of the well-formed UTF-8 character at s that XML allows (no
 * surrogates, no U+FFFE/U+FFFF), or 0. A name cut by the kernel (a comm is
 * 15 bytes) or by a label's width ends inside a character: a byte XML
 * rejects, which blanks the whole picture in a browser. */
static int utf8_char(const unsigned char *s)
{
	unsigned c = s[0], n, cp;

	if (c < 0x80)
		return 1;
	if (c >= 0xc2 && c <= 0xdf)
		n = 2, cp = c & 0x1f;
	else if (c >= 0xe0 && c <= 0xef)
		n = 3, cp = c & 0x0f;
	else if (c >= 0xf0 && c <= 0xf4)
		n = 4, cp = c & 0x07;
	else
		return 0;
	for (unsigned i = 1; i < n; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0; /* (the terminating NUL stops here too) */
		cp = cp << 6 | (s[i] & 0x3f);
	}
	if ((n == 3 && cp < 0x800) || (n == 4 && (cp < 0x10000 || cp > 0x10ffff)) ||
	    (cp >= 0xd800 && cp <= 0xdfff) || cp == 0xfffe || cp == 0xffff)
		return 0;
	return (int)n;
}

void ls_xml_text(FILE *out, const char *s)
{
	while (*s) {
		int n;
		switch (*s) {
		case '<': fputs("&lt;", out); break;
		case '>': fputs("&gt;", out); break;
		case '&': fputs("&amp;", out); break;
		case '"': fputs("&quot;", out); break;
		default:
			if ((unsigned char)*s < 0x20) {
				if (*s == '\n' || *s == '\t')
					fputc(*s, out);
			} else if ((n = utf8_char((const unsigned char *)s)) > 0) {
				fwrite(s, 1, (size_t)n, out);
				s += n;
				continue;
			} else {
				fputc('?', out); /* not UTF-8, or cut inside a character */
			}
		}
		s++;
	}
}

static int depth(const struct node *n)
{
	int d = 0;

	for (size_t i = 0; i < n->nkids; i++) {
		int k = depth(n->kids[i]);
		if (k > d)
			d = k;
	}
	return d + 1;
}

/* The latency graph's synthetic frames, one colour family per component
 * (a sub-part, "network.drain", takes its component's), and the frames that
 * stand for missing data in grey. */
static const struct {
	const char *name;
	int r, g, b;
} family[] = {
	{"network", 80, 140, 215},  {"queueing", 240, 160, 40}, {"transfer", 160, 110, 200},
	{"compute", 215, 70, 60},   {"host", 120, 180, 80},     {"other", 150, 150, 150},
	{"[not sampled]", 200, 200, 200}, {"[no blocked stack]", 200, 200, 200},
	{"[no stack]", 200, 200, 200},
};

/* Warm colours from the name, so a frame keeps its colour across graphs;
 * the latency graph's component frames by family (above). */
static void colour(const char *name, int *r, int *g, int *b)
{
	unsigned h = 2166136261u;

	for (const char *p = name; *p; p++)
		h = (h ^ (unsigned char)*p) * 16777619u;
	for (size_t i = 0; i < sizeof(family) / sizeof(family[0]); i++) {
		size_t l = strlen(family[i].name);
		if (strncmp(name, family[i].name, l) || (name[l] && name[l] != '.'))
			continue;
		int d = name[l] ? (int)(h % 30) - 15 : 0; /* sub-parts: shades of it */
		*r = family[i].r + d < 0 ? 0 : family[i].r + d > 255 ? 255 : family[i].r + d;
		*g = family[i].g + d < 0 ? 0 : family[i].g + d > 255 ? 255 : family[i].g + d;
		*b = family[i].b + d < 0 ? 0 : family[i].b + d > 255 ? 255 : family[i].b + d;
		return;
	}
	*r = 205 + h % 50;
	*g = 80 + (h >> 8) % 130;
	*b = 40 + (h >> 16) % 50;
}

static void svg_node(const struct node *n, FILE *out, double x, int level, int height,
		     double scale, uint64_t total, const char *unit)
{
	double w = n->total * scale;
	int y = height - PAD - (level + 1) * FRAME_H;
	int r, g, b;

	if (w < 0.1)
		return;
	colour(n->name, &r, &g, &b);
	fprintf(out, "<g><title>");
	ls_xml_text(out, n->name);
	fprintf(out, " (%llu %s, %.2f%%)</title><rect x=\"%.2f\" y=\"%d\" width=\"%.2f\" "
		     "height=\"%d\" fill=\"rgb(%d,%d,%d)\" rx=\"2\"/>",
		(unsigned long long)n->total, unit, 100.0 * n->total / total, x, y, w,
		FRAME_H - 1, r, g, b);
	if (w > 30) {
		/* w may be anything a hostile capture's counts make it: bound
		 * the double before it becomes a size */
		double fit = (w - 6) / 7;
		char buf[512];
		size_t chars = fit < (double)sizeof(buf) ? (size_t)fit : sizeof(buf) - 1,
		       l = strlen(n->name);
		snprintf(buf, sizeof(buf), "%s", n->name);
		if (l > chars && chars >= 2) {
			buf[chars - 2] = '.';
			buf[chars - 1] = '.';
			buf[chars] = '\0';
		} else if (l > chars) {
			buf[0] = '\0';
		}
		fprintf(out, "<text x=\"%.2f\" y=\"%d\">", x + 3, y + FRAME_H - 4);
		ls_xml_text(out, buf);
		fprintf(out, "</text>");
	}
	fprintf(out, "</g>\n");
	for (size_t i = 0; i < n->nkids; i++) {
		svg_node(n->kids[i], out, x, level + 1, height, scale, total, unit);
		x += n->kids[i]->total * scale;
	}
}

void ls_flame_svg(struct ls_flame *f, FILE *out, const char *title, const char *unit)
{
	int levels = depth(&f->root);
	int height = levels * FRAME_H + 3 * PAD + 36; /* the title band above the top frame */
	uint64_t total = f->root.total ? f->root.total : 1;
	double scale = (SVG_W - 2.0 * PAD) / total;

	sort_tree(&f->root);
	fprintf(out, "<?xml version=\"1.0\" standalone=\"no\"?>\n"
		     "<svg version=\"1.1\" width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\" "
		     "xmlns=\"http://www.w3.org/2000/svg\" onload=\"init()\">\n",
		SVG_W, height, SVG_W, height);
	fprintf(out, "<style>text{font-family:monospace;font-size:11px;fill:#000;pointer-events:none}"
		     "rect:hover{stroke:#000;stroke-width:0.5}.hit rect{fill:rgb(230,0,230)}</style>\n");
	fprintf(out, "<script><![CDATA[\n"
		     "function init(){}\n"
		     "function search(){var t=prompt('Search frames (regex)','');if(t===null)return;"
		     "var re=new RegExp(t),gs=document.getElementsByTagName('g'),n=0;"
		     "for(var i=0;i<gs.length;i++){var ti=gs[i].getElementsByTagName('title')[0];"
		     "if(!ti)continue;var hit=t&&re.test(ti.textContent);gs[i].setAttribute('class',hit?'hit':'');"
		     "if(hit)n++;}document.getElementById('matched').textContent=t?(n+' frames match'):'';}\n"
		     "]]></script>\n");
	fprintf(out, "<rect x=\"0\" y=\"0\" width=\"%d\" height=\"%d\" fill=\"#f8f8f0\"/>\n", SVG_W,
		height);
	fprintf(out, "<text x=\"%d\" y=\"20\" style=\"font-size:15px\">", PAD);
	ls_xml_text(out, title);
	fprintf(out, "</text>\n<text x=\"%d\" y=\"20\" style=\"pointer-events:all;cursor:pointer\" "
		     "onclick=\"search()\">Search</text>\n<text id=\"matched\" x=\"%d\" y=\"%d\"></text>\n",
		SVG_W - 60, SVG_W - 260, height - 2);
	svg_node(&f->root, out, PAD, 0, height - 24, scale, total, unit);
	fprintf(out, "</svg>\n");
}

static void free_node(struct node *n)
{
	for (size_t i = 0; i < n->nkids; i++) {
		free_node(n->kids[i]);
		free(n->kids[i]);
	}
	free(n->kids);
}

void ls_flame_free(struct ls_flame *f)
{
	if (!f)
		return;
	free_node(&f->root);
	free(f->tab);
	for (size_t i = 0; i < f->capnames; i++)
		free(f->names[i]);
	free(f->names);
	free(f);
}

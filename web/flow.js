// The flow of the computation, drawn from `qkv run -f json`: a diagram of the
// steps, each a link to its table, and for several heads a head view of the
// weights as lines between the tokens. Exports window.qkvFlow.
(() => {
    "use strict";
    const NS = "http://www.w3.org/2000/svg";
    // Okabe and Ito's colours, readable on white, then evenly spaced hues
    const PALETTE = ["#0072B2", "#D55E00", "#009E73", "#CC79A7", "#8C6D00", "#56B4E9", "#000000"];
    const headColour = (i) => i < PALETTE.length ? PALETTE[i] : `hsl(${(i * 137) % 360}, 70%, 38%)`;
    const STYLE = `
.qkv-flow { font-family: system-ui, sans-serif; }
.qkv-flow .node { cursor: pointer; }
.qkv-flow .node:focus { outline: none; }
.qkv-flow .ring { fill: none; stroke: #1a56db; stroke-width: 3; visibility: hidden; }
.qkv-flow .node:focus-visible .ring, .qkv-flow .node:hover .ring { visibility: visible; }
.qkv-flow .edge { fill: none; stroke: #7a8699; stroke-width: 1.5; }
.qkv-flow .edge.cross { stroke-dasharray: 4 3; opacity: 0.12; }
.qkv-flow .edge.lit { stroke: #1a56db; stroke-width: 2.5; opacity: 1; }
.qkv-heads { font-family: system-ui, sans-serif; }
.qkv-heads-buttons { display: flex; flex-wrap: wrap; gap: 0.3rem; margin: 0.3rem 0; }
.qkv-heads-buttons button { font: inherit; display: inline-flex; align-items: center; gap: 0.3em;
    border: 1px solid #888; border-radius: 4px; background: #fff; color: #111; padding: 0.15em 0.5em; cursor: pointer; }
.qkv-heads-buttons button[aria-pressed="false"] { color: #666; background: #eee; text-decoration: line-through; }
.qkv-heads-buttons button[aria-pressed="false"] .swatch { opacity: 0.3; }
.qkv-heads-buttons .swatch { width: 0.9em; height: 0.9em; border-radius: 2px; display: inline-block; }
.qkv-heads .token { cursor: default; }
.qkv-heads .token:focus { outline: none; }
.qkv-heads .token:focus-visible text, .qkv-heads .token.active text { font-weight: 700; text-decoration: underline; }
.qkv-heads .off-head, .qkv-heads .off-token { display: none; }
.qkv-heads p { margin: 0.2rem 0; font-size: 0.85em; color: #444; }`;

    // An element named `name`, in the SVG namespace or (html) not, with these attributes, put in `parent`
    function svgEl(doc, name, attrs, parent, html) {
        const e = html ? doc.createElement(name) : doc.createElementNS(NS, name);
        for (const [k, v] of Object.entries(attrs || {})) {
            e.setAttribute(k, String(v));
        }
        if (parent) {
            parent.appendChild(e);
        }
        return e;
    }
    const htmlEl = (doc, name, attrs, parent, text) => {
        const e = svgEl(doc, name, attrs, parent, true);
        e.textContent = text || "";
        return e;
    };
    // A line of text that keeps within `width` at this font size: squeezed a little, or cut short with "…" when `cut`
    function textEl(doc, parent, x, y, text, size, attrs, width, cut) {
        const t = svgEl(doc, "text", Object.assign({ x, y, "font-size": size }, attrs), parent);
        const fits = width ? Math.floor(width / (size * 0.56)) : Infinity;
        cut = cut && text.length > 1.2 * fits;
        t.textContent = cut ? text.slice(0, fits - 1).trimEnd() + "…" : text;
        if (!cut && text.length > fits) {
            t.setAttribute("textLength", width);
            t.setAttribute("lengthAdjust", "spacingAndGlyphs");
        }
        return t;
    }
    let unique = 0;

    // ── the graph: one node per step id, its heads collapsed ───────────────
    const shapeOf = (step) => {
        const rows = Array.isArray(step.values) ? step.values.length : (step.rows || []).length;
        const cols = rows && Array.isArray(step.values[0]) ? step.values[0].length : (step.cols || []).length;
        return `${rows} × ${cols}`;
    };
    // The matrix's symbol: the formula before " = ", head numbers dropped from a step per head
    function symbolOf(step) {
        const formula = String(step.formula || "");
        let symbol = formula.includes(" = ") ? formula.split(" = ")[0] : formula;
        if (step.head !== null && step.head !== undefined) {
            symbol = symbol.replace(/\^\(\d+\)/g, "").replace(/_\d+\b/g, "");
        }
        return symbol.length <= 14 ? symbol : "";
    }
    // What the example adds at this step, in the JSON's own words
    function tagOf(step, run) {
        const params = run.params || {};
        const mask = params.mask;
        const tags = [];
        const paren = /\(([^)]+)\)\s*$/.exec(step.title || "");
        if (paren) {
            tags.push(paren[1]);
        }
        if (mask && mask.kind && mask.kind !== "none" && /mask/i.test(step.title || "")) {
            const said = (step.notes || []).map((n) => n.split(":")).filter((p) => p.length > 1 && p[0].length < 28);
            tags.push(...(said.length ? said.map((p) => p[0]) : [mask.kind + " mask"]));
        }
        if (params.sinks && /sink/i.test(step.formula || "")) {
            tags.push("sinks");
        }
        const names = [run.tokens, run.context_tokens].find((t) => Array.isArray(t) &&
            JSON.stringify(t) === JSON.stringify(step.rows));
        if (!tags.length && !(step.reads || []).length && names) {
            tags.push(names.join(" · "));
        }
        return tags.join(", ");
    }
    function graphOf(run) {
        const dims = run.dims || {};
        const nodes = new Map();
        for (const step of run.steps || []) {
            let node = nodes.get(step.id);
            if (!node) {
                node = { id: step.id, step, heads: [], reads: new Set(), backward: step.id.startsWith("grad_") };
                nodes.set(step.id, node);
            }
            if (step.head !== null && step.head !== undefined && !node.heads.includes(step.head)) {
                node.heads.push(step.head);
            }
            for (const read of step.reads || []) {
                node.reads.add(read.id);
            }
        }
        // the steps read but not in this run: drawn faint, without a link
        for (const id of [...nodes.values()].flatMap((node) => [...node.reads]).filter((id) => !nodes.has(id))) {
            nodes.set(id, { id, ghost: true, heads: [], reads: new Set(), backward: id.startsWith("grad_") });
        }
        for (const node of nodes.values()) {
            const count = node.heads.length;
            const kv = count > 1 && count === dims.kv_heads && dims.kv_heads < dims.heads;
            node.headsText = count > 1 ? `×${count} ${kv ? "key/value heads" : "heads"}` : "";
            if (!node.ghost) {
                node.shape = shapeOf(node.step);
                node.symbol = symbolOf(node.step);
                node.tag = tagOf(node.step, run);
                node.label = [node.id, count > 1 ? `${count} ${kv ? "key/value heads" : "heads"}` : "",
                    node.shape, node.tag].filter(Boolean).join(", ");
            }
        }
        return nodes;
    }

    // ── the layout: a column a depth, a band for the forward and one for the backward steps
    // Depth: the longest path from a step that reads nothing in its band
    function depthsOf(nodes) {
        const depth = new Map();
        const visit = (node, seen) => {
            if (!depth.has(node.id)) {
                seen.add(node.id);
                depth.set(node.id, Math.max(0, ...[...node.reads].map((id) => nodes.get(id))
                    .filter((m) => m.backward === node.backward && !seen.has(m.id)).map((m) => visit(m, seen) + 1)));
                seen.delete(node.id);
            }
            return depth.get(node.id);
        };
        nodes.forEach((node) => visit(node, new Set()));
        // a step that reads nothing sits just before the first step that reads it
        for (const node of nodes.values()) {
            const readers = [...nodes.values()].filter((n) => n.reads.has(node.id) && n.backward === node.backward);
            if (![...node.reads].some((id) => nodes.get(id).backward === node.backward) && readers.length) {
                depth.set(node.id, Math.max(0, Math.min(...readers.map((n) => depth.get(n.id))) - 1));
            }
        }
        return depth;
    }
    // Slots across each column: near the mean of the neighbours' slots, in at most `span` slots, never overlapping
    function placeColumns(columns, span, neighbours) {
        for (const column of columns) {
            const want = column.map((item, i) => {
                const near = neighbours(item).filter((n) => n.slot !== undefined).map((n) => n.slot);
                return near.length ? near.reduce((a, b) => a + b) / near.length : (item.slot ?? i);
            });
            const order = column.map((item, i) => i).sort((a, b) => want[a] - want[b] || a - b);
            const slots = order.map((i) => want[i]);
            for (let k = 0; k < slots.length; ++k) {
                slots[k] = Math.max(slots[k], k ? slots[k - 1] + 1 : 0);
            }
            for (let k = slots.length - 1; k >= 0; --k) {
                slots[k] = Math.max(0, Math.min(slots[k], k + 1 < slots.length ? slots[k + 1] - 1 : span - 1));
            }
            order.forEach((i, k) => { column[i].slot = slots[k]; });
        }
    }
    // A column a depth, the forward steps in one band and the backward ones in another. An edge
    // that skips columns gets a waypoint in each, so that the columns keep room for it.
    function layout(nodes, vertical, lines) {
        const W = 132, H = 26 + 14 * lines, GAP_MAIN = vertical ? 30 : 26, GAP_CROSS = vertical ? 14 : 12;
        const depth = depthsOf(nodes);
        const routes = new Map();
        const bands = [false, true].map((backward) => {
            const columns = [];
            const put = (item, d) => {
                Object.assign(item, { depth: d, before: [], after: [] });
                (columns[d] = columns[d] || []).push(item);
            };
            const members = [...nodes.values()].filter((n) => n.backward === backward);
            members.forEach((n) => put(n, depth.get(n.id)));
            for (const n of members) {
                for (const from of [...n.reads].map((id) => nodes.get(id)).filter((m) => m.backward === backward)) {
                    const way = [];
                    for (let d = from.depth + 1; d < n.depth; ++d) {
                        way.push({ way: true, backward });
                        put(way[way.length - 1], d);
                    }
                    routes.set(`${from.id}>${n.id}`, way);
                    [from, ...way, n].reduce((a, b) => { a.after.push(b); b.before.push(a); return b; });
                }
            }
            const filled = columns.filter(Boolean);
            const span = Math.max(0, ...filled.map((c) => c.length));
            placeColumns(filled, span, (n) => n.before);
            placeColumns(filled.filter((c) => c.every((n) => !n.before.length)), span, (n) => n.after);
            return { items: filled.flat(), depths: columns.length, span };
        });
        const [fwd, bwd] = bands;
        const last = Math.max(fwd.depths, bwd.depths) - 1;
        const top = bwd.items.length ? 22 : 0;  // room for a band's name
        const step = { main: (vertical ? H : W) + GAP_MAIN, cross: (vertical ? W : H) + GAP_CROSS };
        // bands one under the other; across the page the backward one runs back, right to left
        const start = [8 + top, 24 + 2 * top +
            (vertical ? fwd.depths * step.main - GAP_MAIN : fwd.span * step.cross - GAP_CROSS)];
        for (const [b, band] of bands.entries()) {
            for (const n of band.items) {
                n.main = !n.backward ? n.depth : vertical ? fwd.depths + n.depth : last - n.depth;
                const along = vertical ? start[b] + n.depth * step.main : 8 + n.main * step.main;
                const across = vertical ? 8 + n.slot * step.cross : start[b] + n.slot * step.cross;
                n.box = vertical ? { x: across, y: along, w: W, h: H } : { x: along, y: across, w: W, h: H };
            }
        }
        const boxes = [...nodes.values()].map((n) => n.box);
        const labels = !top ? [] : [{ text: "Forward pass", y: start[0] - 8 },
            { text: "Backward pass: the gradients", y: start[1] - 8 }];
        return { width: Math.max(...boxes.map((b) => b.x + b.w)) + 8, height: Math.max(...boxes.map((b) => b.y + b.h)) + 8,
            labels, routes };
    }

    // An edge's path from `a` to `b` through its waypoints: across each waypoint's column, curving between
    function edgePath(a, b, way, vertical) {
        if (a.backward !== b.backward) {
            // from the forward band to the backward one: out of one box's bottom, into the other's top
            const [x1, y1, x2, y2] = [a.box.x + a.box.w / 2, a.box.y + a.box.h, b.box.x + b.box.w / 2, b.box.y];
            const dy = Math.max(20, (y2 - y1) / 2);
            return `M${x1},${y1} C${x1},${y1 + dy} ${x2},${y2 - dy} ${x2},${y2}`;
        }
        const dir = b.main >= a.main ? 1 : -1;
        const side = (bx, far) => (vertical ? bx.y : bx.x) + ((dir > 0) === far ? (vertical ? bx.h : bx.w) : 0);
        const mid = (bx) => vertical ? bx.x + bx.w / 2 : bx.y + bx.h / 2;
        const pt = (m, c) => (vertical ? [c, m] : [m, c]).join(",");
        let [m, c] = [side(a.box, true), mid(a.box)];
        let d = `M${pt(m, c)}`;
        for (const x of [...way, b]) {
            const [m2, c2] = [side(x.box, false), mid(x.box)];
            d += ` C${pt((m + m2) / 2, c)} ${pt((m + m2) / 2, c2)} ${pt(m2, c2)}`;
            [m, c] = [side(x.box, true), c2];
            if (x !== b) {
                d += ` L${pt(m, c)}`;
            }
        }
        return d;
    }

    // Lines of text under a box's symbol: id and shape, heads when any step has several, what the example adds
    const linesOf = (nodes) => 2 + [...nodes.values()].some((n) => n.headsText) + [...nodes.values()].some((n) => n.tag);
    // Draws the graph into `svg`, laid out across (or, when vertical, down) the page
    function draw(svg, nodes, vertical, options) {
        const doc = options.doc;
        const L = layout(nodes, vertical, linesOf(nodes));
        svg.replaceChildren();
        for (const [k, v] of Object.entries({ viewBox: `0 0 ${L.width} ${L.height}`, width: L.width, height: L.height,
            "data-orientation": vertical ? "vertical" : "horizontal" })) {
            svg.setAttribute(k, v);
        }
        svgEl(doc, "style", {}, svg).textContent = STYLE;
        const defs = svgEl(doc, "defs", {}, svg);
        const arrow = `qkv-flow-arrow-${++unique}`;
        const marker = svgEl(doc, "marker", { id: arrow, viewBox: "0 0 8 8", refX: 7, refY: 4,
            markerWidth: 9, markerHeight: 9, markerUnits: "userSpaceOnUse", orient: "auto-start-reverse" }, defs);
        svgEl(doc, "path", { d: "M0,0 L8,4 L0,8 z", fill: "#7a8699" }, marker);
        for (const label of L.labels) {
            textEl(doc, svg, 8, label.y, label.text, 12, { fill: "#444", "font-weight": 600 });
        }
        // the edges, under the boxes
        const edges = svgEl(doc, "g", { class: "edges" }, svg);
        for (const node of nodes.values()) {
            for (const id of node.reads) {
                const from = nodes.get(id);
                svgEl(doc, "path", { class: from.backward !== node.backward ? "edge cross" : "edge",
                    d: edgePath(from, node, L.routes.get(`${id}>${node.id}`) || [], vertical), "marker-end": `url(#${arrow})`,
                    "data-from": id, "data-to": node.id }, edges);
            }
        }
        const light = (id, on) => edges.querySelectorAll(`[data-from="${id}"], [data-to="${id}"]`)
            .forEach((e) => e.classList.toggle("lit", on));
        // the boxes: symbol, id, heads, shape and what the example adds
        for (const node of nodes.values()) {
            const { x, y, w, h } = node.box;
            const head = node.heads.length ? Math.min(...node.heads) : null;
            const g = svgEl(doc, "g", node.ghost ? { class: "ghost" } : { class: "node", "data-step": node.id,
                "data-head": head === null ? "" : head, role: "link", tabindex: 0, "aria-label": node.label }, svg);
            const fill = node.ghost ? "#fff" : node.backward ? "#fff4e8" : "#eef4fc";
            const stroke = node.ghost ? "#999" : node.backward ? "#b8651b" : "#4d73a8";
            svgEl(doc, "rect", { class: "ring", x: x - 3, y: y - 3, width: w + 6, height: h + 6, rx: 8 }, g);
            svgEl(doc, "rect", { class: "box", x, y, width: w, height: h, rx: 6, fill, stroke,
                "stroke-dasharray": node.ghost ? "4 3" : "none" }, g);
            const left = x + 8, inner = w - 16;
            if (node.ghost) {
                textEl(doc, g, left, y + 20, node.id, 12, { fill: "#666" }, inner);
                textEl(doc, g, left, y + 36, "not in this run", 11, { fill: "#666", "font-style": "italic" }, inner);
                continue;
            }
            svgEl(doc, "title", {}, g).textContent = [node.step.title, node.step.formula, ...(node.step.notes || [])].filter(Boolean).join("\n");
            // the symbol, "_x" written as a subscript; the title when the formula gives none
            const sym = textEl(doc, g, left, y + 20, node.symbol ? "" : node.step.title || node.id, 16,
                { fill: "#111", "font-weight": 600, "aria-hidden": "true" }, inner, true);
            node.symbol.split(/_([A-Za-z0-9]+)/).forEach((part, i) => {
                const shift = i % 2 ? 4 : i ? -4 : 0;
                svgEl(doc, "tspan", i % 2 ? { dy: shift, "font-size": 11 } : { dy: shift }, sym).textContent = part;
            });
            const rows = [[node.id, "#333"], [node.shape, "#333"], [node.headsText, "#0b5394"], [node.tag, "#9c2a6a"]];
            rows.filter(([text]) => text).forEach(([text, colour], i) => {
                textEl(doc, g, left, y + 35 + 14 * i, text, 12, { fill: colour }, inner, i > 1);
            });
            const go = () => options.onStep && options.onStep(node.id, head);
            g.addEventListener("click", go);
            g.addEventListener("keydown", (event) => {
                if (event.key === "Enter" || event.key === " ") {
                    event.preventDefault();
                    go();
                }
            });
            for (const [type, on] of [["mouseenter", true], ["mouseleave", false], ["focus", true], ["blur", false]]) {
                g.addEventListener(type, () => light(node.id, on));
            }
        }
    }

    function diagram(run, options = {}) {
        const doc = options.doc || document;
        const view = doc.defaultView;
        const nodes = graphOf(run);
        const svg = svgEl(doc, "svg", { class: "qkv-flow", role: "group", "font-family": "system-ui, sans-serif",
            "aria-label": `The flow of the computation: ${nodes.size} steps; each box opens its step`,
            style: "max-width: 100%; height: auto; display: block" });
        const opts = Object.assign({}, options, { doc });
        if (!nodes.size) {
            svg.setAttribute("viewBox", "0 0 200 30");
            textEl(doc, svg, 8, 20, "No steps", 13, {});
            return svg;
        }
        // across when it fits, or nearly, in the page; down a narrow one
        if (options.narrow !== undefined) {
            draw(svg, nodes, Boolean(options.narrow), opts);
            return svg;
        }
        const across = layout(nodes, false, linesOf(nodes)).width;
        const narrow = () => view ? across > 1.5 * Math.max(200, view.innerWidth - 16) : false;
        draw(svg, nodes, narrow(), opts);
        // redrawn when the page turns narrow or wide, keeping the focus on its step
        if (view && view.addEventListener) {
            const resize = () => {
                if (!svg.isConnected) {
                    view.removeEventListener("resize", resize);
                } else if ((svg.dataset.orientation === "vertical") !== narrow()) {
                    const focused = svg.contains(doc.activeElement) && doc.activeElement.getAttribute("data-step");
                    draw(svg, nodes, narrow(), opts);
                    const again = focused && svg.querySelector(`.node[data-step="${focused}"]`);
                    if (again) {
                        again.focus();
                    }
                }
            };
            view.addEventListener("resize", resize);
        }
        return svg;
    }

    // ── the head view: every head's weights as lines from the queries' tokens to the keys' ──
    const MAX_LINES = 20000;
    function headView(run, options = {}) {
        const doc = options.doc || document;
        const weights = (run.steps || []).filter((s) => s.id === "weights" && s.head !== null && s.head !== undefined);
        if (weights.length < 2) {
            return null;
        }
        const left = weights[0].rows || [], right = weights[0].cols || [];
        // with many tokens, only each query's strongest weights, so that the page stays quick
        const cells = left.length * right.length * weights.length;
        const keep = cells > MAX_LINES ? Math.max(1, Math.floor(MAX_LINES / (left.length * weights.length))) : right.length;
        const box = htmlEl(doc, "div", { class: "qkv-heads" });
        htmlEl(doc, "style", {}, box, STYLE);
        const buttons = htmlEl(doc, "div", { class: "qkv-heads-buttons", role: "group", "aria-label": "Heads shown" }, box);

        // two columns of tokens, the lines between them
        const size = 15, row = Math.max(left.length, right.length) > 40 ? 18 : 34, chars = (t) => String(t).length * size * 0.6;
        const labelW = Math.ceil(Math.max(52, ...left.map(chars))) + 8;
        const rightW = Math.ceil(Math.max(52, ...right.map(chars))) + 8;
        const x1 = labelW + 8, x2 = x1 + 200, headTop = 24;
        const width = x2 + 8 + rightW, height = headTop + row * Math.max(left.length, right.length) + 6;
        const svg = svgEl(doc, "svg", { class: "qkv-heads-lines", viewBox: `0 0 ${width} ${height}`, width, height,
            role: "group", "font-family": "system-ui, sans-serif", style: "max-width: 100%; height: auto; display: block",
            "aria-label": "Attention weights of each head, as lines from the queries' tokens to the keys' tokens" }, box);
        textEl(doc, svg, labelW, 14, "queries", 12, { fill: "#555", "text-anchor": "end" });
        textEl(doc, svg, x2 + 8, 14, "keys", 12, { fill: "#555" });
        const lines = svgEl(doc, "g", { class: "weights" }, svg);
        const yOf = (i) => headTop + row * i + row / 2;
        weights.forEach((step, k) => {
            const colour = headColour(k);
            const spread = Math.min(1.5, 6 / weights.length) * (k - (weights.length - 1) / 2);
            const g = svgEl(doc, "g", { class: "head", "data-head": step.head, stroke: colour }, lines);
            (step.values || []).forEach((values, i) => {
                const strong = values.map(Number).map((w, j) => [w, j]).filter(([w]) => Number.isFinite(w) && w > 0)
                    .sort((a, b) => b[0] - a[0]).slice(0, keep);
                for (const [w, j] of strong) {
                    svgEl(doc, "line", { class: "weight", x1, y1: yOf(i) + spread, x2, y2: yOf(j) + spread,
                        "stroke-width": 2, "stroke-opacity": Math.min(1, w).toFixed(3),
                        "data-head": step.head, "data-from": i, "data-to": j }, g);
                }
            });
            const button = htmlEl(doc, "button", { type: "button", "data-head": step.head, "aria-pressed": "true" }, buttons);
            button.append(htmlEl(doc, "span", { class: "swatch", style: `background: ${colour}` }), `Head ${step.head}`);
            button.addEventListener("click", () => {
                const on = button.getAttribute("aria-pressed") !== "true";
                button.setAttribute("aria-pressed", String(on));
                g.querySelectorAll("line").forEach((l) => l.classList.toggle("off-head", !on));
            });
        });

        // a token hovered or focused: its lines alone
        const only = (side, i) => lines.querySelectorAll("line").forEach((l) =>
            l.classList.toggle("off-token", i !== null && l.getAttribute(side) !== String(i)));
        const tokens = (names, side, x, anchor) => names.forEach((name, i) => {
            const g = svgEl(doc, "g", { class: "token", tabindex: 0, "data-side": side === "data-from" ? "query" : "key",
                "data-index": i }, svg);
            textEl(doc, g, x, yOf(i) + size * 0.35, name, size, { fill: "#111", "text-anchor": anchor });
            for (const [type, on] of [["mouseenter", true], ["mouseleave", false], ["focus", true], ["blur", false]]) {
                g.addEventListener(type, () => { g.classList.toggle("active", on); only(side, on ? i : null); });
            }
        });
        tokens(left, "data-from", labelW, "end");
        tokens(right, "data-to", x2 + 8, "start");

        const say = (text) => htmlEl(doc, "p", {}, box, text);
        say("Each line is a weight, from a query's token to a key's: the darker, the larger. " +
            "Point at or focus a token to see its lines alone." +
            (keep < right.length ? ` Only each query's ${keep} largest weights a head are drawn.` : ""));
        // which key/value head each query head reads, from the steps' reads
        const dims = run.dims || {};
        if (dims.kv_heads && dims.kv_heads < dims.heads) {
            // the heads of each step, in this run or read by it: key/value steps have kv_heads of them
            const heads = new Map();
            for (const { id, head } of (run.steps || []).flatMap((step) => [step, ...(step.reads || [])])) {
                heads.set(id, (heads.get(id) || new Set()).add(head));
            }
            const count = (id) => [...heads.get(id)].filter((h) => h !== null && h !== undefined).length;
            const groups = new Map();
            for (const step of run.steps || []) {
                const kv = (step.reads || []).find((r) => count(r.id) === dims.kv_heads && r.head);
                if (kv && count(step.id) === dims.heads && weights.some((w) => w.head === step.head)) {
                    groups.set(kv.head, [...new Set([...(groups.get(kv.head) || []), step.head])]);
                }
            }
            if (groups.size) {
                say([...groups].sort((a, b) => a[0] - b[0]).map(([kv, qs]) =>
                    (qs.length > 1 ? `query heads ${qs.slice(0, -1).join(", ")} and ${qs[qs.length - 1]} read` :
                        `query head ${qs[0]} reads`) + ` key/value head ${kv}`).join("; ").replace(/^q/, "Q") + ".");
            }
        }
        return box;
    }

    window.qkvFlow = { diagram, headView };
})();

// The playground's page: window.qkv runs the command line, compiled to
// WebAssembly, on files held in memory; the controls call it.
(function () {
    "use strict";

    // ── the module: gzipped in the page as base64, unpacked once ───────────
    async function wasmBinary() {
        const text = atob(document.getElementById("qkv-wasm").textContent.trim());
        const packed = new Uint8Array(text.length);
        for (let i = 0; i < text.length; ++i) {
            packed[i] = text.charCodeAt(i);
        }
        const stream = new Blob([packed]).stream().pipeThrough(new DecompressionStream("gzip"));
        return new Uint8Array(await new Response(stream).arrayBuffer());
    }

    let stdout = [];
    let stderr = [];
    const ready = wasmBinary().then((binary) => createQkv({
        wasmBinary: binary,
        // standard output and error as bytes, one call's at a time; not a terminal
        preRun: [(module) => module.FS.init(() => null,
            (c) => { if (c !== null) stdout.push(c & 255); },
            (c) => { if (c !== null) stderr.push(c & 255); })],
        print: () => {},
        printErr: () => {},
    }));

    // One command at a time: `qkv ARGS`, with FILES (name → text) written
    // beside it first and removed after.
    let queue = Promise.resolve();
    function call(args, files) {
        const job = queue.then(() => ready).then((module) => {
            for (const [name, text] of Object.entries(files)) {
                module.FS.writeFile(name, text);
            }
            stdout = [];
            stderr = [];
            let status;
            try {
                status = module.callMain(args.map(String));
            } finally {
                for (const name of Object.keys(files)) {
                    try { module.FS.unlink(name); } catch (e) { /* already gone */ }
                }
            }
            const decoder = new TextDecoder();
            return { status: status, stdout: decoder.decode(new Uint8Array(stdout)),
                     stderr: decoder.decode(new Uint8Array(stderr)) };
        });
        queue = job.catch(() => {});
        return job;
    }

    // A built-in name stands for itself; any other text is the file model.yaml.
    function source(yaml, name, files) {
        if (/^[A-Za-z0-9_.-]+$/.test(yaml)) {
            return yaml;
        }
        files[name] = yaml;
        return name;
    }

    // The command line's results, byte for byte: what `qkv run model.yaml ARGS`
    // prints with the YAML in model.yaml (and the answers in answers.yaml).
    window.qkv = {
        version: QKV_VERSION,
        ready: ready.then(() => true),
        run(yaml, args = []) {
            const files = {};
            return call(["run", source(yaml, "model.yaml", files), ...args], files);
        },
        explain(yaml, cells, args = []) {
            const files = {};
            return call(["explain", source(yaml, "model.yaml", files), ...[].concat(cells), ...args], files);
        },
        check(yaml, answers, args = []) {
            const files = {};
            return call(["check", source(yaml, "model.yaml", files), "--answers",
                         source(answers, "answers.yaml", files), ...args], files);
        },
        worksheet(yaml, args = []) {
            const files = {};
            return call(["worksheet", source(yaml, "model.yaml", files), ...args], files);
        },
        lesson(n, args = []) { return call(["lesson", String(n), ...args], {}); },
        examples() { return call(["examples"], {}); },
    };

    // ── the page ──────────────────────────────────────────────────────────
    const $ = (id) => document.getElementById(id);
    const editor = $("editor");
    const EXAMPLES = JSON.parse($("qkv-examples").textContent);  // name → YAML

    // What the learner typed and where they were, kept in the browser between
    // visits: the YAML of "your own" and of any built-in they edited, the
    // controls, the answers for each example, a lesson in progress, the tab.
    // Each page keeps its own, by the example it was written with.
    const STORE = "qkv-playground:" + QKV_VERSION.split(".")[0] + ":" + (QKV_INITIAL || hashOf(editor.value));
    function hashOf(text) {
        let h = 0;
        for (let i = 0; i < text.length; ++i) {
            h = (h * 31 + text.charCodeAt(i)) | 0;
        }
        return (h >>> 0).toString(36);
    }
    function load() {
        try {
            return JSON.parse(localStorage.getItem(STORE) || "null");
        } catch (e) {
            return null;  // no storage here (a sandboxed frame): the page still works, forgetting on reload
        }
    }
    const state = Object.assign({
        slot: QKV_INITIAL,                          // the example in the editor: a built-in's name, "" for your own
        texts: QKV_INITIAL ? {} : { "": editor.value },  // slot → the text typed there
        steps: "", head: "0", precision: "4", backward: false,
        work: {},                                   // slot → {answers: text, cells: [values typed in the tables]}
        lesson: null,                               // {n, answers: [...], revealed: [...]}
        tab: "view",
    }, load() || {});
    let saveTimer = 0;
    function save() {
        clearTimeout(saveTimer);
        saveTimer = setTimeout(() => {
            try { localStorage.setItem(STORE, JSON.stringify(state)); } catch (e) { /* not kept */ }
        }, 200);
    }
    addEventListener("pagehide", () => {
        try { localStorage.setItem(STORE, JSON.stringify(state)); } catch (e) { /* not kept */ }
    });

    // The text of a slot: what was typed there, else the built-in as it is.
    function textOf(slot) { return slot in state.texts ? state.texts[slot] : (EXAMPLES[slot] || ""); }
    // What qkv reads: a built-in by its name while unedited, else the text.
    function model() { return state.slot && !(state.slot in state.texts) ? state.slot : editor.value; }
    function work() {
        return state.work[state.slot] || (state.work[state.slot] = { answers: "", cells: [] });
    }
    // The answer template of the worksheet's tables while they are what the
    // learner is answering in (empty once the answers' text is typed in).
    let sheetTemplate = "";

    // ── the editor: line numbers, and the line an error names marked ──────
    const gutter = $("gutter");
    let badLine = 0;
    function numberLines() {
        const count = editor.value.split("\n").length;
        let html = "";
        for (let i = 1; i <= count; ++i) {
            html += (i === badLine ? '<span class="bad">' + i + "</span>" : String(i)) + "\n";
        }
        gutter.innerHTML = html;
        gutter.scrollTop = editor.scrollTop;
    }
    editor.addEventListener("scroll", () => { gutter.scrollTop = editor.scrollTop; });

    // A message of qkv's about model.yaml: shown under the editor, its line
    // marked, with a button that puts the cursor there; any other under the
    // controls that caused it.
    function showErrors(stderr) {
        const where = /model\.yaml:(\d+):(\d+):/.exec(stderr);
        badLine = where ? Number(where[1]) : 0;
        numberLines();
        $("errors").textContent = where ? stderr : "";
        $("show-errors").textContent = where ? "" : stderr;
        if (where) {
            const go = document.createElement("button");
            go.type = "button";
            go.textContent = "Go to line " + where[1];
            go.addEventListener("click", () => {
                const lines = editor.value.split("\n");
                const start = lines.slice(0, badLine - 1).reduce((n, line) => n + line.length + 1, 0);
                editor.focus();
                editor.setSelectionRange(start + Number(where[2]) - 1, start + (lines[badLine - 1] || "").length);
            });
            $("errors").append("\n", go);
        }
        return where !== null;
    }

    // ── the output's tabs: the steps, the grading, the lesson ──────────────
    const PANES = { view: "pane-view", report: "report", "lesson-view": "lesson-view" };
    function select(tab) {
        state.tab = tab;
        for (const [name, pane] of Object.entries(PANES)) {
            $(pane).hidden = name !== tab;
            $("tab-" + name).setAttribute("aria-selected", String(name === tab));
        }
        $("tab-" + tab).hidden = false;
        save();
    }
    for (const name of Object.keys(PANES)) {
        $("tab-" + name).addEventListener("click", () => select(name));
    }
    function show(frame, html) {
        $(frame).srcdoc = html;
        $(frame).classList.remove("stale");
        select(frame);
        inView();
    }
    // On a narrow screen the output is below the controls: brought up to be seen.
    function inView() {
        const top = $("output").getBoundingClientRect().top;
        if (top > innerHeight * 0.6 || top < -innerHeight) {
            $("output").scrollIntoView({ block: "start" });
        }
    }

    function options() {
        const args = ["-p", $("precision").value || "4"];
        if ($("steps").value.trim()) {
            args.push("-s", $("steps").value.trim());
        }
        if (Number($("head").value) > 0) {
            args.push("--head", $("head").value);
        }
        if ($("backward").checked) {
            args.push("--backward");
        }
        return args;
    }
    function backwardArgs() { return $("backward").checked ? ["--backward"] : []; }

    // The steps, and from qkv's JSON of every step the diagram, the head
    // view, the step ids the Steps box offers and the heads it can show.
    let pending = 0;
    let run = null;  // that JSON, parsed
    async function compute() {
        const mine = ++pending;
        const result = await qkv.run(model(), ["-f", "html", ...options()]);
        if (mine !== pending) {
            return;  // a later edit is on its way
        }
        const modelError = showErrors(result.stderr);
        $("status").textContent = result.status === 0 ? ""
            : "not computed: see the message " + (modelError ? "under the example" : "under Show");
        if (result.status !== 0) {
            $("view").classList.add("stale");
            return;
        }
        $("view").srcdoc = result.stdout;
        $("view").classList.remove("stale");
        if (result.stdout.length < 4e6) {
            const all = await qkv.run(model(), ["-f", "json", ...backwardArgs()]);
            if (mine === pending && all.status === 0) {
                run = JSON.parse(all.stdout);
                drawFlow();
            }
        }
    }
    function drawFlow() {
        const ids = [...new Set(run.steps.map((step) => step.id))];
        $("step-ids").replaceChildren(...ids.map((id) => new Option("", id)));
        const head = $("head");
        const chosen = state.head;
        head.replaceChildren(new Option("every head", "0"));
        for (let h = 1; h <= run.dims.heads; ++h) {
            head.append(new Option("head " + h, String(h)));
        }
        head.value = Number(chosen) <= run.dims.heads ? chosen : "0";
        head.disabled = run.dims.heads < 2;
        const panel = $("flow-panel");
        if (!window.qkvFlow) {
            return;
        }
        panel.hidden = false;
        $("flow").replaceChildren(qkvFlow.diagram(run, { onStep: goToStep }));
        $("flow").dataset.example = state.slot;
        const heads = qkvFlow.headView(run, {});
        $("heads").replaceChildren(...(heads ? [heads] : []));
    }
    // A step of the diagram: its table in the steps, in view.
    function goToStep(id, head) {
        select("view");
        inView();
        const page = $("view").contentDocument;
        const section = page && (page.getElementById(id + (head ? "-h" + head : "")) || page.getElementById(id));
        if (section) {
            section.scrollIntoView({ block: "start" });
            const cell = section.querySelector("button.cell");
            if (cell) {
                cell.focus({ preventScroll: true });
            }
        }
    }

    let timer = 0;
    function soon() {
        clearTimeout(timer);
        timer = setTimeout(compute, 250);
    }

    // ── the example: built-in or your own, every text typed kept ───────────
    function openSlot(slot) {
        state.slot = slot;
        sheetTemplate = "";  // another example's tables
        editor.value = textOf(slot);
        $("example").value = slot;
        $("reset").hidden = !slot || !(slot in state.texts);
        $("answers").value = work().answers;
        badLine = 0;
        numberLines();
        save();
    }
    editor.addEventListener("input", () => {
        state.texts[state.slot] = editor.value;
        sheetTemplate = "";  // the tables were this text's before the edit
        $("reset").hidden = !state.slot;
        numberLines();
        save();
        soon();
    });
    $("example").addEventListener("change", () => {
        openSlot($("example").value);
        compute();
    });
    $("reset").addEventListener("click", () => {
        delete state.texts[state.slot];
        openSlot(state.slot);
        compute();
    });
    // A fresh example of your own, as `qkv init` writes one, with a seed of
    // its own; what was typed in "your own" before is kept unless it is
    // replaced on purpose.
    $("fresh").addEventListener("click", async () => {
        const own = state.texts[""];
        if (own && own.trim() && !confirm("Replace the example of your own with a fresh one?")) {
            return;
        }
        const seed = String(1 + Math.floor(Math.random() * 100000));
        const result = await call(["init", "--seed", seed], {});
        if (result.status !== 0) {
            $("errors").textContent = result.stderr;
            return;
        }
        // its opening comments speak of the command line: the page says its own
        const lines = result.stdout.split("\n");
        const first = lines.findIndex((line) => !line.startsWith("#"));
        state.texts[""] = "# A fresh example: change any number and every step follows.\n" +
            lines.slice(first).join("\n");
        state.work[""] = { answers: "", cells: [] };
        openSlot("");
        compute();
    });

    for (const id of ["steps", "head", "precision", "backward"]) {
        $(id).addEventListener("change", () => {
            state.steps = $("steps").value;
            state.head = $("head").value;
            state.precision = $("precision").value;
            state.backward = $("backward").checked;
            save();
            soon();
        });
    }

    // ── a cell clicked in the steps: the cells it was worked from, lit ─────
    $("view").addEventListener("load", () => {
        const page = $("view").contentDocument;
        if (!page) {
            return;
        }
        const style = page.createElement("style");
        style.textContent = "td.operand { background: #fff3b0 !important; outline: 2px solid #c79a00; }" +
            "td.operand-of { outline: 3px solid #0b5cad; }";
        page.head.append(style);
        page.addEventListener("click", (event) => {
            const cell = event.target.closest && event.target.closest("button.cell");
            if (cell) {
                lightOperands(page, cell);
            }
        });
    });
    async function lightOperands(page, button) {
        page.querySelectorAll("td.operand, td.operand-of").forEach((td) => td.classList.remove("operand", "operand-of"));
        const name = (button.getAttribute("aria-label") || "").split(" = ")[0];
        if (!name) {
            return;
        }
        const result = await qkv.explain(model(), [name], ["-f", "json", ...backwardArgs()]);
        if (result.status !== 0) {
            return;
        }
        button.closest("td").classList.add("operand-of");
        for (const cell of JSON.parse(result.stdout).cells) {
            for (const operand of cell.operands || []) {
                const section = page.getElementById(operand.step + (operand.head ? "-h" + operand.head : ""));
                const rows = section ? [...section.querySelectorAll("tbody tr")] : [];
                rows.forEach((tr, i) => {
                    if (operand.row && operand.row !== i + 1) {
                        return;
                    }
                    [...tr.querySelectorAll("td")].forEach((td, j) => {
                        if (!operand.col || operand.col === j + 1) {
                            td.classList.add("operand");
                        }
                    });
                });
            }
        }
    }

    // ── answers: typed into the worksheet's empty tables or as YAML ────────
    // The worksheet's blank cells come in the order of the answer template's
    // ~, which the values typed replace one by one; each value is kept as it
    // is typed, so the tables come back filled.
    $("in-tables").addEventListener("click", async () => {
        const template = await qkv.worksheet(model(), ["-f", "yaml", ...backwardArgs()]);
        const sheet = await qkv.worksheet(model(), ["-f", "html", ...backwardArgs()]);
        $("answer-errors").textContent = template.stderr || sheet.stderr;
        if (template.status === 0 && sheet.status === 0) {
            sheetTemplate = template.stdout;
            show("report", sheet.stdout);
        }
    });
    $("report").addEventListener("load", () => {
        const page = $("report").contentDocument;
        if (!page) {
            return;
        }
        if (sheetTemplate) {
            fillTables(page);
        } else {
            pageOwnWords(page);
        }
    });
    function fillTables(page) {
        const cells = work().cells;
        page.querySelectorAll("td.blank").forEach((cell, i) => {
            const row = cell.parentElement.querySelector("th");
            const section = cell.closest("section");
            const heading = section ? section.querySelector("h2") : null;
            const input = page.createElement("input");
            input.className = "answer-cell";
            input.size = 6;
            input.value = cells[i] || "";
            input.setAttribute("aria-label", (heading ? heading.textContent : "") + ", " + (row ? row.textContent : ""));
            input.addEventListener("input", () => {
                work().cells[i] = input.value;
                save();
            });
            cell.appendChild(input);
        });
    }
    function sheetAnswers() {
        const values = work().cells.map((value) => (value || "").trim());
        let next = 0;
        return sheetTemplate.split("\n").map((line) => {
            const hash = line.indexOf("#");
            const code = hash < 0 ? line : line.slice(0, hash);
            const rest = hash < 0 ? "" : line.slice(hash);
            return code.replace(/~/g, () => {
                const value = values[next++];
                return value ? value : "~";
            }) + rest;
        }).join("\n");
    }
    // The report as the page shows it: no file the learner never made, and
    // the working of a wrong cell a button away, not a command to type.
    function pageOwnWords(page) {
        page.querySelectorAll("p").forEach((p) => {
            const code = p.querySelector("code");
            const text = code ? code.textContent : "";
            if (text.startsWith("qkv explain")) {
                const cell = /'([^']+)'\s*$/.exec(text);
                p.replaceChildren();
                if (cell) {
                    const button = page.createElement("button");
                    button.type = "button";
                    button.textContent = "Show how " + cell[1] + " is worked out";
                    button.addEventListener("click", () => showWorking(page, p, cell[1]));
                    p.append(button);
                }
            } else if (p.firstChild && p.firstChild.nodeType === 3 && p.firstChild.textContent === "Answers from " && code) {
                p.firstChild.remove();
                code.remove();
                p.firstChild.textContent = p.firstChild.textContent.replace(/^\.\s*/, "");
            }
        });
    }
    async function showWorking(page, where, cell) {
        const result = await qkv.explain(model(), [cell], ["-f", "html", "-p", $("precision").value || "4",
                                                          ...backwardArgs()]);
        const body = new DOMParser().parseFromString(result.stdout, "text/html").querySelector("main");
        const box = page.createElement("div");
        box.className = "working-shown";
        box.innerHTML = body ? body.innerHTML : "";
        where.after(box);
        where.remove();
    }

    $("answers").addEventListener("input", () => {
        sheetTemplate = "";  // typed here: these are the answers to grade, not the tables'
        work().answers = $("answers").value;
        save();
    });
    $("template").addEventListener("click", async () => {
        sheetTemplate = "";
        const result = await qkv.worksheet(model(), ["-f", "yaml", ...backwardArgs()]);
        $("answer-errors").textContent = result.stderr;
        if (result.status === 0) {
            $("answers").value = result.stdout;
            work().answers = result.stdout;
            save();
        }
    });
    $("grade").addEventListener("click", async () => {
        if (sheetTemplate) {
            $("answers").value = sheetAnswers();  // from the tables, into the answers' text
            work().answers = $("answers").value;
            save();
        }
        sheetTemplate = "";
        const result = await qkv.check(model(), $("answers").value, ["-f", "html", ...backwardArgs()]);
        // exit 1 is a graded report with mistakes in it; 2 is a problem with the files
        $("answer-errors").textContent = result.status === 2 ? result.stderr : "";
        if (result.status !== 2) {
            show("report", result.stdout);
        }
    });

    // ── a lesson: one question at a time ───────────────────────────────────
    // `qkv lesson N --answer …` grades the answers given so far, one per
    // question in order, as a terminal does. The page shows the lesson up to
    // the first question still open and nothing below it, so that each is
    // answered before its table or its explanation is seen. A wrong answer
    // may be tried once more (not where there are only two options); then,
    // or when asked, the answer is shown and the lesson goes on.
    const LESSONS = [...$("lesson").options].map((option) => option.textContent);
    async function playLesson(focus) {
        const lesson = state.lesson;
        const args = ["-f", "html"];
        for (const answer of lesson.answers) {
            // "--answer=-1" keeps a minus from reading as an option; an empty one stands alone
            args.push(...(answer ? ["--answer=" + answer] : ["--answer", ""]));
        }
        const result = await qkv.lesson(lesson.n, args);
        if (result.status === 0) {
            lessonFocus = focus;
            show("lesson-view", result.stdout);
        }
        $("restart-lesson").hidden = false;
        save();
    }
    let lessonFocus = -1;
    $("lesson-view").addEventListener("load", () => {
        const page = $("lesson-view").contentDocument;
        if (!page || !state.lesson) {
            return;
        }
        const style = page.createElement("style");
        style.textContent = ".qkv-ahead { display: none !important; } form.ask { margin: 0.5rem 0; }" +
            "form.ask button, .next button { margin-right: 0.4rem; } .next { margin: 1rem 0; }" +
            ".waiting { color: #555; font-style: italic; }";
        page.head.append(style);
        // the terminal's commands are not for this page
        page.querySelectorAll("p").forEach((p) => {
            const code = p.querySelector("code");
            if (code && code.textContent.startsWith("qkv ")) {
                p.remove();
            }
        });
        const lesson = state.lesson;
        const questions = [...page.querySelectorAll("div.question")];
        const open = questions.findIndex((question, i) => {
            const answered = i < lesson.answers.length;
            const wrong = question.querySelector(".verdict-wrong") !== null;
            if (wrong && question.textContent.includes("not an answer of this question")) {
                lesson.revealed[i] = false;  // not read as an answer: no try spent
            }
            const shown = !answered || lesson.answers[i] === "" || (wrong && lesson.revealed[i]);
            const details = question.querySelector("details");
            if (details && answered && shown) {
                details.open = true;  // asked for, or wrong to the last try: the answer, unfolded
            }
            return !answered || (wrong && !lesson.revealed[i]);
        });
        if (open < 0) {
            endOfLesson(page);
            return;
        }
        const question = questions[open];
        for (let node = question; node && node !== page.body; node = node.parentElement) {
            for (let next = node.nextElementSibling; next; next = next.nextElementSibling) {
                next.classList.add("qkv-ahead");
            }
        }
        const details = question.querySelector("details");
        if (details) {
            details.classList.add("qkv-ahead");
        }
        const wrong = question.querySelector(".verdict-wrong") !== null;
        const form = page.createElement("form");
        form.className = "ask";
        form.innerHTML = "<label>" + (wrong ? "Try again" : "Your answer") +
            ' <input name="answer" autocomplete="off"/></label> <button type="submit">Check</button>' +
            '<button type="button" class="show">Show the answer</button>';
        form.addEventListener("submit", (event) => {
            event.preventDefault();
            const answer = form.elements.answer.value.trim();
            if (answer) {
                answerQuestion(open, answer, question);
            }
        });
        form.querySelector("button.show").addEventListener("click", () => {
            if (wrong) {
                lesson.revealed[open] = true;
            } else {
                lesson.answers[open] = "";
            }
            playLesson(open);
        });
        const wait = page.createElement("p");
        wait.className = "waiting";
        wait.textContent = "The lesson goes on once you answer, or ask for the answer.";
        question.append(form, wait);
        if (lessonFocus >= 0) {
            form.elements.answer.focus({ preventScroll: true });
            question.scrollIntoView({ block: "center" });
        }
    });
    // Two options and one wrong: a second try would give the answer away.
    function eitherOr(question) {
        const form = question.querySelector(".note");
        return form !== null && /^\([^,]+ or [^,]+\)$/.test(form.textContent.trim());
    }
    function answerQuestion(i, answer, question) {
        const lesson = state.lesson;
        const again = i < lesson.answers.length;  // a second try
        lesson.answers[i] = answer;
        if (again || eitherOr(question)) {
            lesson.revealed[i] = true;  // if it is wrong again, the answer comes with it
        }
        playLesson(i);
    }
    // The end: the page's own next steps in place of the terminal's.
    function endOfLesson(page) {
        const end = page.getElementById("end");
        if (!end) {
            return;
        }
        if (lessonFocus >= 0) {
            end.scrollIntoView({ block: "center" });
        }
        // "End of lesson 1." without the terminal's "Next: qkv lesson 2 (scaling)."
        end.querySelectorAll("p.note").forEach((note) => {
            const stop = note.textContent.indexOf(". ");
            if (note.textContent.startsWith("End of") && stop > 0) {
                note.textContent = note.textContent.slice(0, stop + 1);
            }
        });
        const next = page.createElement("p");
        next.className = "next";
        const n = Number(state.lesson.n);
        const buttons = [];
        if (n < LESSONS.length) {
            buttons.push(["Next lesson: " + LESSONS[n], () => openLesson(String(n + 1))]);
        }
        buttons.push(["Try it on a fresh example", () => { select("view"); $("fresh").click(); }]);
        buttons.push(["Back to the steps", () => select("view")]);
        for (const [label, action] of buttons) {
            const button = page.createElement("button");
            button.type = "button";
            button.textContent = label;
            button.addEventListener("click", action);
            next.append(button);
        }
        end.append(next);
    }
    function openLesson(n) {
        $("lesson").value = n;
        state.lesson = { n: n, answers: [], revealed: [] };
        playLesson(-1);
    }
    $("open-lesson").addEventListener("click", () => {
        // the lesson in progress goes on where it was; another starts
        if (state.lesson && state.lesson.n === $("lesson").value) {
            playLesson(state.lesson.answers.length);
        } else {
            openLesson($("lesson").value);
        }
    });
    $("restart-lesson").addEventListener("click", () => openLesson($("lesson").value));
    $("lesson").addEventListener("change", () => {
        $("open-lesson").textContent = state.lesson && state.lesson.n === $("lesson").value ? "Go on" : "Open";
    });

    // ── where the learner was ──────────────────────────────────────────────
    $("steps").value = state.steps;
    $("precision").value = state.precision;
    $("backward").checked = state.backward;
    $("head").replaceChildren(new Option("every head", "0"));
    if (state.head !== "0") {
        $("head").append(new Option("head " + state.head, state.head));
    }
    $("head").value = state.head;
    if (!(state.slot in state.texts) && !(state.slot in EXAMPLES)) {
        state.slot = "";
    }
    openSlot(state.slot);
    if (state.lesson) {
        $("lesson").value = state.lesson.n;
        $("open-lesson").textContent = "Go on";
        $("restart-lesson").hidden = false;
    }
    ready.then(() => {
        $("status").textContent = "";
        compute();  // the preloaded steps, then the diagram, or the learner's own again
        // the tab that was shown, made again
        if (state.lesson && state.tab === "lesson-view") {
            playLesson(state.lesson.answers.length);
        } else if (state.tab === "report" && work().answers) {
            $("grade").click();
        } else if (state.tab === "report" && work().cells.length) {
            $("in-tables").click();
        } else {
            select("view");
        }
    }, (error) => { $("status").textContent = "qkv could not start here: " + error; });
})();

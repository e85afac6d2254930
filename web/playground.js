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
    let current = QKV_INITIAL;  // a built-in's name while its text is unedited

    function model() { return current || editor.value; }

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

    function show(frame, html) {
        for (const id of ["view", "report", "lesson-view"]) {
            $(id).hidden = id !== frame;
        }
        $(frame).srcdoc = html;
        $(frame).classList.remove("stale");
    }

    let pending = 0;
    async function compute() {
        const mine = ++pending;
        const result = await qkv.run(model(), ["-f", "html", ...options()]);
        if (mine !== pending) {
            return;  // a later edit is on its way
        }
        $("errors").textContent = result.stderr;
        if (result.status === 0) {
            show("view", result.stdout);
        } else {
            $("view").classList.add("stale");
        }
        $("status").textContent = result.status === 0 ? "" : "not computed: see the message below the example";
    }

    let timer = 0;
    function soon() {
        clearTimeout(timer);
        timer = setTimeout(compute, 250);
    }

    editor.addEventListener("input", () => {
        current = "";
        $("example").value = "";
        soon();
    });
    for (const id of ["steps", "head", "precision", "backward"]) {
        $(id).addEventListener("change", soon);
    }
    $("example").addEventListener("change", async () => {
        const name = $("example").value;
        if (!name) {
            return;
        }
        editor.value = EXAMPLES[name];
        current = name;
        compute();
    });
    // Answers typed into the worksheet's empty tables: its blank cells come in
    // the order of the answer template's ~, which they replace one by one.
    let sheetTemplate = "";
    function backwardArgs() { return $("backward").checked ? ["--backward"] : []; }
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
        if (!sheetTemplate || !page) {
            return;
        }
        page.querySelectorAll("td.blank").forEach((cell) => {
            const row = cell.parentElement.querySelector("th");
            const section = cell.closest("section");
            const heading = section ? section.querySelector("h2") : null;
            const input = page.createElement("input");
            input.className = "answer-cell";
            input.size = 6;
            input.setAttribute("aria-label", (heading ? heading.textContent : "") + ", " + (row ? row.textContent : ""));
            cell.appendChild(input);
        });
    });
    function sheetAnswers() {
        const page = $("report").contentDocument;
        const values = page ? [...page.querySelectorAll("input.answer-cell")].map((input) => input.value.trim()) : [];
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

    $("template").addEventListener("click", async () => {
        sheetTemplate = "";
        const result = await qkv.worksheet(model(), ["-f", "yaml", ...backwardArgs()]);
        $("answer-errors").textContent = result.stderr;
        if (result.status === 0) {
            $("answers").value = result.stdout;
        }
    });
    $("grade").addEventListener("click", async () => {
        const args = ["-f", "html"];
        if ($("backward").checked) {
            args.push("--backward");
        }
        if (sheetTemplate && !$("report").hidden) {
            $("answers").value = sheetAnswers();  // from the tables, into the answers' text
        }
        sheetTemplate = "";
        const result = await qkv.check(model(), $("answers").value, args);
        // exit 1 is a graded report with mistakes in it; 2 is a problem with the files
        $("answer-errors").textContent = result.status === 2 ? result.stderr : "";
        if (result.status !== 2) {
            show("report", result.stdout);
        }
    });
    // A lesson: its questions get a box each in the page, and the answers
    // typed so far are graded by `qkv lesson N --answer …`, one per question
    // in order, as a terminal grades them.
    let lessonAnswers = [];
    let lessonFocus = -1;  // the question answered last, to scroll back to
    async function playLesson() {
        const args = ["-f", "html"];
        for (const answer of lessonAnswers) {
            // "--answer=-1" keeps a minus from reading as an option; an empty one stands alone
            args.push(...(answer ? ["--answer=" + answer] : ["--answer", ""]));
        }
        const result = await qkv.lesson($("lesson").value, args);
        if (result.status === 0) {
            show("lesson-view", result.stdout);
        }
    }
    $("lesson-view").addEventListener("load", () => {
        const page = $("lesson-view").contentDocument;
        if (!page) {
            return;
        }
        page.querySelectorAll("div.question").forEach((question, i) => {
            if (i === lessonFocus) {
                question.scrollIntoView({ block: "center" });
            }
            const wrong = question.querySelector(".verdict-wrong") !== null;
            if (lessonAnswers[i] && !wrong) {
                return;  // right: nothing more to ask
            }
            const form = page.createElement("form");
            form.className = "ask";
            form.innerHTML = '<label>' + (wrong ? "Try again" : "Your answer") +
                ' <input name="answer" autocomplete="off"/></label> <button type="submit">Check</button>';
            form.addEventListener("submit", (event) => {
                event.preventDefault();
                const answer = form.elements.answer.value.trim();
                if (!answer) {
                    return;
                }
                while (lessonAnswers.length <= i) {
                    lessonAnswers.push("");
                }
                lessonAnswers[i] = answer;
                lessonFocus = i;
                playLesson();
            });
            // before the folded answer, or after the verdict
            question.insertBefore(form, wrong ? null : question.querySelector("details"));
        });
    });
    $("open-lesson").addEventListener("click", () => {
        lessonAnswers = [];
        lessonFocus = -1;
        playLesson();
    });

    ready.then(() => { $("status").textContent = ""; },
               (error) => { $("status").textContent = "qkv could not start here: " + error; });
})();

// Runs qkv's WebAssembly (the playground's, as built in build/web/) under
// Node.js for a list of command lines, as the page runs it: each call is
// `qkv ARGS` in a fresh folder of the module's memory holding FILES.
//   node run_wasm.js BUILD_WEB_DIR < calls.json > results.json
// calls.json: [{"args": [...], "files": {"model.yaml": BASE64}}, ...]
// results.json: [{"status": 0, "stdout": BASE64, "stderr": BASE64, "ms": 12}, ...]
// (the bytes as written, in base64, so that they compare byte for byte).
"use strict";
const fs = require("fs");
const path = require("path");

const dir = process.argv[2];
const createQkv = require(path.resolve(dir, "qkv.js"));
const calls = JSON.parse(fs.readFileSync(0, "utf8"));

(async () => {
    let stdout = [];
    let stderr = [];
    const module = await createQkv({
        wasmBinary: fs.readFileSync(path.join(dir, "qkv.wasm")),
        preRun: [(m) => m.FS.init(() => null,
            (c) => { if (c !== null) stdout.push(c & 255); },
            (c) => { if (c !== null) stderr.push(c & 255); })],
        print: () => {},
        printErr: () => {},
    });
    const results = [];
    calls.forEach((call, i) => {
        const folder = "/call" + i;
        module.FS.mkdir(folder);
        module.FS.chdir(folder);
        for (const [name, text] of Object.entries(call.files || {})) {  // text: the bytes in base64
            module.FS.writeFile(name, Buffer.from(text, "base64"));
        }
        stdout = [];
        stderr = [];
        const start = Date.now();
        const status = module.callMain(call.args);
        results.push({ status: status, ms: Date.now() - start,
                       stdout: Buffer.from(stdout).toString("base64"),
                       stderr: Buffer.from(stderr).toString("base64") });
    });
    process.stdout.write(JSON.stringify(results));
    process.exitCode = 0;  // emscripten sets it to each call's status
})();

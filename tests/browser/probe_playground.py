#!/usr/bin/python3
"""Opens the page of `qkv playground` in headless Chromium (Debian's chromium
and chromium-driver, driven by python3-selenium) from file:// and uses it as
a reader would, reporting what happened as one JSON object on stdout. The C++
test (tests/unit/test_playground.cpp) decides what is right.

    probe_playground.py PAGE [--no-js | --framed] [--screenshot PNG]

Reports:
  ready_ms     how long qkv took to start in the page
  api          window.qkv's results: run (illustrated, -f markdown), explain
               (scores[1,2]), check (a wrong answer file), lesson (1, text),
               examples, the version, and a BERT-size run (512 tokens,
               d_model 768, 12 heads: `run -s output`) and its milliseconds
  error        the message shown after a broken line is typed into the editor
  cell         a cell of the steps clicked: whether its working opened, its text
  graded       the report after the answer template is filled in and graded:
               a wrong query, a score row of the wrong shape, and one weight
               worked without exp (0.2) from the true scores
  graded_tables
               the report after two cells of the worksheet's empty tables are
               typed in (table_cells: how many there were) and graded;
               answers_from_tables: the answers' text they made
  static       with --no-js: the text of the steps shown without JavaScript
  framed       with --framed, the page inside an <iframe srcdoc> of another
               page, as a notebook's output cell shows it: window.qkv's run
               of illustrated (-f json -s scores) there; framed_steps: the
               length of the steps' text it shows
  fetched      URLs the page asked for beyond itself (must be none)
  console      messages of level SEVERE in the browser's console
Exit status 3 when the browser or its driver is missing (the test skips).
"""
import os
import sys
import time

API = """
const done = arguments[arguments.length - 1];
(async () => {
  const out = {};
  out.run = await qkv.run("illustrated", ["-f", "markdown"]);
  out.explain = await qkv.explain("illustrated", ["scores[1,2]"], []);
  out.check = await qkv.check("illustrated", "scores:\\n  - [1, 2, 3]\\n", []);
  out.lesson = await qkv.lesson(1, []);
  out.examples = await qkv.examples();
  out.version = qkv.version;
  const bert = "inputs: {random: {rows: 512, cols: 768, seed: 1}}\\nheads: 12\\nweights:\\n" +
    "  query: {random: {rows: 768, cols: 768, seed: 2}}\\n  key: {random: {rows: 768, cols: 768, seed: 3}}\\n" +
    "  value: {random: {rows: 768, cols: 768, seed: 4}}\\n";
  const start = performance.now();
  out.bert = await qkv.run(bert, ["-s", "output"]);
  out.bert_ms = performance.now() - start;
  out.bert_yaml = bert;
  return out;
})().then(done, (e) => done({failed: String(e)}));
"""


def main():
    args = sys.argv[1:]
    if not args:
        print(__doc__, file=sys.stderr)
        return 2
    page = args[0]
    no_js = "--no-js" in args
    framed = "--framed" in args
    screenshot = args[args.index("--screenshot") + 1] if "--screenshot" in args else ""
    import chromium
    driver = chromium.start("probe_playground.py", 1300, 1000, no_js)
    if driver is None:
        return 3
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait
    driver.set_script_timeout(120)
    report = {}
    wait = WebDriverWait(driver, 60)
    try:
        start = time.monotonic()
        if not framed:
            driver.get("file://" + os.path.abspath(page))
        if framed:
            # as a notebook shows it: the page in an <iframe srcdoc> of another page
            import html
            host = os.path.abspath(page) + ".host.html"
            with open(page, encoding="utf-8") as f, open(host, "w", encoding="utf-8") as out:
                out.write('<!DOCTYPE html><html><body><p>A notebook cell:</p><iframe id="cell" srcdoc="' +
                          html.escape(f.read()) + '" style="width:100%;height:700px;border:0"></iframe></body></html>')
            driver.get("file://" + host)
            driver.switch_to.frame(driver.find_element(By.ID, "cell"))
            driver.execute_async_script("const done = arguments[0]; (function wait() {"
                                        " if (window.qkv) { qkv.ready.then(done, done); } else { setTimeout(wait, 50); }"
                                        " })();")
            report["framed"] = driver.execute_async_script(
                "qkv.run('illustrated', ['-f', 'json', '-s', 'scores']).then(arguments[0], (e) => arguments[0]({failed: String(e)}))")
            report["framed_steps"] = driver.execute_script(
                "return document.getElementById('view').contentDocument.body.innerText.length")
            driver.switch_to.default_content()
        elif no_js:
            driver.switch_to.frame(driver.find_element(By.ID, "view"))
            report["static"] = driver.find_element(By.TAG_NAME, "body").text
            driver.switch_to.default_content()
        else:
            driver.execute_async_script("qkv.ready.then(arguments[0], arguments[0])")
            report["ready_ms"] = (time.monotonic() - start) * 1000
            report["api"] = driver.execute_async_script(API)

            # a broken line typed into the editor: its message appears beside it
            editor = driver.find_element(By.ID, "editor")
            good = editor.get_attribute("value")
            editor.send_keys("\ninputs: [[1, 2], oops\n")
            wait.until(lambda d: d.find_element(By.ID, "errors").text != "")
            report["error"] = driver.find_element(By.ID, "errors").text

            # mended: the steps come back, and a cell opens its working
            driver.execute_script("const e = document.getElementById('editor'); e.value = arguments[0];"
                                  "e.dispatchEvent(new Event('input'));", good)
            wait.until(lambda d: d.find_element(By.ID, "errors").text == "")
            time.sleep(0.5)
            driver.switch_to.frame(driver.find_element(By.ID, "view"))
            wait.until(lambda d: d.find_elements(By.CSS_SELECTOR, "button.cell"))
            cell = driver.find_elements(By.CSS_SELECTOR, "button.cell")[0]
            driver.execute_script("arguments[0].scrollIntoView({block: 'center'})", cell)
            cell.click()
            target = cell.get_attribute("popovertarget") or ""
            opened = driver.find_element(By.ID, target) if target else None
            report["cell"] = {"label": cell.get_attribute("aria-label") or cell.text,
                              "open": bool(opened) and driver.execute_script(
                                  "return arguments[0].matches(':popover-open')", opened),
                              "text": opened.text if opened else ""}
            driver.switch_to.default_content()

            # the answer template, filled in with a wrong number, graded
            driver.find_element(By.ID, "template").click()
            wait.until(lambda d: d.find_element(By.ID, "answers").get_attribute("value") != "")
            template = driver.find_element(By.ID, "answers").get_attribute("value")
            report["template"] = template
            driver.execute_script("document.getElementById('answers').value = arguments[0];",
                                  "queries:\n  - [2, 0, 2]\n  - [2, 2, 2]\n  - [2, 1, 3]\n"
                                  "scores:\n  - [9, 16, 16]\n"
                                  "weights:\n  - [0.2, ~, ~]\n  - ~\n  - ~\n")
            driver.find_element(By.ID, "grade").click()
            wait.until(lambda d: not d.find_element(By.ID, "report").get_attribute("hidden"))
            driver.switch_to.frame(driver.find_element(By.ID, "report"))
            wait.until(lambda d: d.find_element(By.TAG_NAME, "body").text != "")
            report["graded"] = driver.find_element(By.TAG_NAME, "body").text
            driver.switch_to.default_content()

            # the same, typed into the worksheet's empty tables: queries[1,1] right (1), queries[1,2] wrong (5)
            driver.find_element(By.ID, "in-tables").click()
            driver.switch_to.frame(driver.find_element(By.ID, "report"))
            wait.until(lambda d: len(d.find_elements(By.CSS_SELECTOR, "input.answer-cell")) > 1)
            cells = driver.find_elements(By.CSS_SELECTOR, "input.answer-cell")
            report["table_cells"] = len(cells)
            report["table_cell_label"] = cells[0].get_attribute("aria-label")
            cells[0].send_keys("1")
            cells[1].send_keys("5")
            driver.switch_to.default_content()
            driver.find_element(By.ID, "grade").click()
            driver.switch_to.frame(driver.find_element(By.ID, "report"))
            wait.until(lambda d: "Checking answers" in d.find_element(By.TAG_NAME, "body").text)
            report["graded_tables"] = driver.find_element(By.TAG_NAME, "body").text
            driver.switch_to.default_content()
            report["answers_from_tables"] = driver.find_element(By.ID, "answers").get_attribute("value")

        if screenshot:
            driver.save_screenshot(screenshot)
    except BaseException:
        driver.quit()
        raise
    chromium.finish(driver, report)
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/python3
"""Uses the page of `qkv playground` in headless Chromium as a learner does
(SPEC §13a) and reports what was on the screen at each point as one JSON
object on stdout; the C++ test (tests/unit/test_playground.cpp) decides what
is right. Text is what a reader sees: hidden parts are not in it.

    probe_learning.py PAGE [--phone] [--shots DIR]

--phone opens the page 390 × 844 (else 1400 × 1000); --shots saves a
screenshot of each stage in DIR.

Reports:
  lesson_first     lesson 1 opened: the lesson's visible text
  shape_right      after "3 x 3" typed into the shape question and Enter
  scores_before    whether the scores table of lesson 1's page 3 is shown
                   while its question is open; scores_wrong: the text after 16;
                   scores_after_wrong: the table shown then; scores_right: the
                   text after 12; scores_after: the table shown then
  after_control    the lesson's text and whether it is the tab shown, after
                   Decimals changed
  after_reload     the same after the page is loaded again
  weight_wrong     the text after 2/10 for query 1's weight for key 1
  weight_shown     the text after "Show the answer"
  lesson_end       the text at the end, after every question is answered
                   (right or shown); end_buttons: the buttons it offers;
                   next_lesson: the first line after "Next lesson" is pressed
  graded_tables    the grading of two table cells typed, the steps' tab
                   shown, then Grade pressed; tables_again: what the tables
                   hold when opened again
  graded           the grading's visible text; working: the text after its
                   "Show how … is worked out" button is pressed
  answers_back     the answers' text after another example and back
  edit_back        the first line of the editor after an edit, another
                   example and back; own_back: "your own"'s text after a
                   built-in and back; own_reload: after a reload
  bracket_error    the message after the ] of line 9 is removed, and the
                   line number marked in the editor's margin
  steps_moved      how far the Steps box moved while "score" was typed into
                   it and entered; steps_error: the message then
  operands         the cells lit after scores[2,3] is clicked in the steps:
                   [section id, row, column] each
  shaded_scores    how many of the scores' cells are shaded
  flow             for illustrated, two-heads and gqa: the diagram's nodes
                   (data-step and label), the head view's head buttons, and
                   whether a node's click showed its step
  jump_top         the top of the link that jumps to the steps (on a narrow
                   screen) or of the steps, in px from the top of the screen
  fetched, console as in every probe
Exit status 3 when the browser or its driver is missing (the test skips).
"""
import json
import os
import sys
import time

LESSON_TEXT = "return document.getElementById('lesson-view').contentDocument.body.innerText"
REPORT_TEXT = "return document.getElementById('report').contentDocument.body.innerText"
# whether a step's table of the lesson is shown: SECTION is the end of its id
TABLE_SHOWN = """
const doc = document.getElementById('lesson-view').contentDocument;
const section = [...doc.querySelectorAll('section')].find((s) => s.id.endsWith(arguments[0]));
return !!section && section.offsetParent !== null;
"""
# the open question's box: types TEXT and presses its button (or "show")
ANSWER = """
const doc = document.getElementById('lesson-view').contentDocument;
const form = doc.querySelector('form.ask');
if (!form) { return false; }
if (arguments[1] === 'show') { form.querySelector('button.show').click(); return true; }
form.elements.answer.value = arguments[0];
form.querySelector('button[type=submit]').click();
return true;
"""


def main():
    args = sys.argv[1:]
    if not args:
        print(__doc__, file=sys.stderr)
        return 2
    page = os.path.abspath(args[0])
    phone = "--phone" in args
    shots = args[args.index("--shots") + 1] if "--shots" in args else ""
    import chromium
    driver = chromium.start("probe_learning.py", 390 if phone else 1400, 844 if phone else 1000)
    if driver is None:
        return 3
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys
    from selenium.webdriver.support.ui import Select, WebDriverWait
    driver.set_script_timeout(120)
    wait = WebDriverWait(driver, 60)
    report = {}

    def shot(name):
        if shots:
            driver.save_screenshot(os.path.join(shots, name + ".png"))

    def js(script, *values):
        return driver.execute_script(script, *values)

    def open_page(clear=False):
        driver.get("file://" + page)
        if clear:
            js("localStorage.clear()")
            driver.get("file://" + page)
        driver.execute_async_script("qkv.ready.then(arguments[0], arguments[0])")
        wait.until(lambda d: js("return document.getElementById('status').textContent === ''"))

    def lesson_text():
        return js("const f = document.getElementById('lesson-view');"
                  "return f.contentDocument && f.contentDocument.body ? f.contentDocument.body.innerText : ''")

    def answer(text, expect):
        before = lesson_text()
        js(ANSWER, text, "show" if text == "" else "")
        wait.until(lambda d: lesson_text() != before and expect in lesson_text())
        return lesson_text()

    try:
        open_page(clear=True)

        # a lesson, one question at a time
        Select(driver.find_element(By.ID, "lesson")).select_by_value("1")
        driver.find_element(By.ID, "open-lesson").click()
        wait.until(lambda d: "What shape will Q have?" in lesson_text())
        report["lesson_first"] = lesson_text()
        shot("lesson-first")
        driver.switch_to.frame(driver.find_element(By.ID, "lesson-view"))
        box = driver.find_element(By.CSS_SELECTOR, "form.ask input")
        box.send_keys("3 x 3", Keys.ENTER)  # the keyboard alone
        driver.switch_to.default_content()
        wait.until(lambda d: "Right." in lesson_text() and "score of query 2" in lesson_text())
        report["shape_right"] = lesson_text()
        report["scores_before"] = js(TABLE_SHOWN, "-scores-h1")
        report["scores_wrong"] = answer("16", "Not quite")
        report["scores_after_wrong"] = js(TABLE_SHOWN, "-scores-h1")
        report["scores_right"] = answer("12", "What weight will query 1 give key 1?")
        report["scores_after"] = js(TABLE_SHOWN, "-scores-h1")

        # a control changed, then the page loaded again: the lesson is where it was
        precision = driver.find_element(By.ID, "precision")
        precision.clear()
        precision.send_keys("3", Keys.TAB)
        time.sleep(1.5)
        report["after_control"] = {"text": lesson_text(),
                                   "shown": js("return !document.getElementById('lesson-view').hidden")}
        open_page()
        wait.until(lambda d: "What weight will query 1 give key 1?" in lesson_text())
        report["after_reload"] = {"text": lesson_text(),
                                  "shown": js("return !document.getElementById('lesson-view').hidden")}
        report["weight_wrong"] = answer("2/10", "2/10 = 0.2")
        shot("lesson-wrong")
        report["weight_shown"] = answer("", "third number of output 1")
        # the rest: each asked for, to the end
        for _ in range(20):
            if not js("return !!document.getElementById('lesson-view').contentDocument.querySelector('form.ask')"):
                break
            before = lesson_text()
            js(ANSWER, "", "show")
            wait.until(lambda d: lesson_text() != before)
        report["lesson_end"] = lesson_text()
        report["end_buttons"] = js("return [...document.getElementById('lesson-view').contentDocument"
                                   ".querySelectorAll('.next button')].map((b) => b.textContent)")
        shot("lesson-end")
        js("[...document.getElementById('lesson-view').contentDocument.querySelectorAll('.next button')]"
           ".find((b) => b.textContent.startsWith('Next lesson')).click()")
        wait.until(lambda d: lesson_text().startswith("Lesson 2"))
        report["next_lesson"] = lesson_text().split("\n")[0]

        # answers typed into the tables survive grading and the tables opened again
        driver.find_element(By.ID, "in-tables").click()
        wait.until(lambda d: js("const f = document.getElementById('report'); return !f.hidden && "
                                "f.contentDocument.querySelectorAll('input.answer-cell').length > 1"))
        driver.switch_to.frame(driver.find_element(By.ID, "report"))
        cells = driver.find_elements(By.CSS_SELECTOR, "input.answer-cell")
        cells[0].send_keys("1")
        cells[1].send_keys("5")
        driver.switch_to.default_content()
        driver.find_element(By.ID, "tab-view").click()  # looking at the steps again, then grading
        driver.find_element(By.ID, "grade").click()
        wait.until(lambda d: "Checking answers" in js(REPORT_TEXT))
        report["graded_tables"] = js(REPORT_TEXT)
        driver.find_element(By.ID, "in-tables").click()
        wait.until(lambda d: js("return document.getElementById('report').contentDocument"
                                ".querySelectorAll('input.answer-cell').length > 1"))
        report["tables_again"] = js("return [...document.getElementById('report').contentDocument"
                                    ".querySelectorAll('input.answer-cell')].slice(0, 3).map((i) => i.value)")

        # the grading in the page's own words, a cell's working a button away
        js("const a = document.getElementById('answers'); a.value = 'weights:\\n  - [0.2, ~, ~]\\n  - ~\\n  - ~\\n';"
           "a.dispatchEvent(new Event('input'));")
        driver.find_element(By.ID, "grade").click()
        wait.until(lambda d: "weights[1,1]" in js(REPORT_TEXT))
        report["graded"] = js(REPORT_TEXT)
        js("[...document.getElementById('report').contentDocument.querySelectorAll('button')]"
           ".find((b) => b.textContent.startsWith('Show how')).click()")
        wait.until(lambda d: "weights[1,1] = " in js(REPORT_TEXT))
        report["working"] = js(REPORT_TEXT)
        shot("graded")

        # another example and back: the answers, then an edit, then "your own"
        example = Select(driver.find_element(By.ID, "example"))
        example.select_by_value("two-heads")
        time.sleep(0.5)
        example.select_by_value("illustrated")
        time.sleep(0.5)
        report["answers_back"] = driver.find_element(By.ID, "answers").get_attribute("value")
        editor = driver.find_element(By.ID, "editor")
        js("const e = document.getElementById('editor'); e.focus(); e.setSelectionRange(0, 0);")
        editor.send_keys("# mine\n")
        example.select_by_value("gqa")
        time.sleep(0.5)
        example.select_by_value("illustrated")
        report["edit_back"] = editor.get_attribute("value").split("\n")[0]
        example.select_by_value("")
        js("const e = document.getElementById('editor'); e.value = arguments[0]; e.dispatchEvent(new Event('input'));",
           "title: my own\ninputs: [[1, 0], [0, 1]]\nweights: {query: [[1, 0], [0, 1]], key: [[1, 0], [0, 1]],"
           " value: [[1, 0], [0, 1]]}\n")
        example.select_by_value("rope")
        time.sleep(0.5)
        example.select_by_value("")
        report["own_back"] = editor.get_attribute("value").split("\n")[0]
        time.sleep(0.5)
        open_page()
        report["own_reload"] = driver.find_element(By.ID, "editor").get_attribute("value").split("\n")[0]

        # an unclosed bracket, reported at its own line and marked there
        example = Select(driver.find_element(By.ID, "example"))
        example.select_by_value("illustrated")
        js("const e = document.getElementById('editor'); e.value = e.value.replace('  - [0, 2, 0, 2]', '  - [0, 2, 0, 2');"
           "e.dispatchEvent(new Event('input'));")
        wait.until(lambda d: d.find_element(By.ID, "errors").text != "")
        report["bracket_error"] = {"message": driver.find_element(By.ID, "errors").text,
                                   "marked": js("const b = document.querySelector('#gutter .bad');"
                                                "return b ? b.textContent : ''")}
        shot("bracket")
        js("document.getElementById('reset').click()")
        wait.until(lambda d: d.find_element(By.ID, "errors").text == "")

        # typing in the Steps box never moves it
        steps = driver.find_element(By.ID, "steps")
        # where it is on the page, however the page is scrolled
        where = "return arguments[0].getBoundingClientRect().top + window.scrollY"
        top = js(where, steps)
        steps.send_keys("score")
        time.sleep(0.3)
        mid = js(where, steps)
        steps.send_keys(Keys.ENTER)
        wait.until(lambda d: d.find_element(By.ID, "show-errors").text != "")
        report["steps_moved"] = max(abs(mid - top), abs(js(where, steps) - top))
        report["steps_error"] = driver.find_element(By.ID, "show-errors").text
        steps.clear()
        steps.send_keys(Keys.ENTER)
        wait.until(lambda d: d.find_element(By.ID, "show-errors").text == "")

        # a cell clicked: the rows it was worked from are lit
        time.sleep(1)
        driver.switch_to.frame(driver.find_element(By.ID, "view"))
        cell = driver.find_element(By.CSS_SELECTOR, "button.cell[aria-label^='scores[2,3] ']")
        driver.execute_script("arguments[0].scrollIntoView({block: 'center'})", cell)
        cell.click()
        wait.until(lambda d: d.find_elements(By.CSS_SELECTOR, "td.operand"))
        report["operands"] = driver.execute_script(
            "return [...document.querySelectorAll('td.operand')].map((td) => [td.closest('section').id,"
            " td.parentElement.rowIndex, td.cellIndex])")
        report["shaded_scores"] = len(driver.find_elements(By.CSS_SELECTOR, "#scores-h1 td.shade"))
        driver.find_element(By.TAG_NAME, "body").send_keys(Keys.ESCAPE)
        driver.switch_to.default_content()
        shot("operands")

        # the diagram and the head view follow the example
        report["flow"] = {}
        for name in ("illustrated", "two-heads", "gqa"):
            Select(driver.find_element(By.ID, "example")).select_by_value(name)
            wait.until(lambda d: js("return !!document.querySelector('#flow svg') && "
                                    "document.querySelector('#flow').dataset.example === arguments[0]", name))
            seen = {"nodes": js("return [...document.querySelectorAll('#flow [data-step]')]"
                                ".map((n) => [n.dataset.step, n.getAttribute('aria-label')])"),
                    "heads": js("return [...document.querySelectorAll('#heads button[aria-pressed]')]"
                                ".map((b) => b.textContent)")}
            js("document.getElementById('view').contentWindow.scrollTo(0, 0);"
               "document.querySelector('#flow [data-step=\"weights\"]').dispatchEvent(new MouseEvent('click', {bubbles: true}))")
            time.sleep(0.3)
            seen["clicked_scrolls"] = js("return document.getElementById('view').contentWindow.scrollY > 0")
            report["flow"][name] = seen
            shot("flow-" + name)
        js("window.scrollTo(0, 0)")
        # the link to the steps where it is shown (a narrow screen), else the steps themselves
        report["jump_top"] = js("const j = document.querySelector('.jump');"
                                "return (j.offsetParent ? j : document.getElementById('output')).getBoundingClientRect().top")
        shot("top")
    except BaseException:
        print("probe_learning.py: stopped; seen so far: " + json.dumps(report, ensure_ascii=False), file=sys.stderr)
        driver.quit()
        raise
    chromium.finish(driver, report)
    return 0


if __name__ == "__main__":
    sys.exit(main())

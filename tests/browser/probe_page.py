#!/usr/bin/python3
"""Opens one of qkv's HTML pages in headless Chromium (Debian's chromium and
chromium-driver, driven by python3-selenium) and reports what a reader meets,
as one JSON object on stdout. The C++ test (tests/unit/test_html_browser.cpp)
decides what is right; this script only looks.

    probe_page.py PAGE [--no-js] [--click CSS] [--screenshot PNG] [--width W]

Reports:
  console      messages of level SEVERE in the browser's console
  fetched      URLs the page asked for beyond itself (must be none)
  buttons      how many cell buttons the page has
  click        the first element matching --click (default: the first cell
               button) clicked: the id it opens, whether it is open, its text
               (for a <summary>: whether its <details> opened, and its text)
  keyboard     Tab pressed from the top until a cell button has the focus,
               Enter pressed: the button's label, whether its working opened
               and its text, and whether Escape closed it again
  phone        at 390 px wide: the page's scroll width (a table may scroll
               sideways in its own box, the page may not)
  print        with print media: whether the workings and close buttons are
               hidden and the cells look like plain numbers
  text         the page's visible text
Exit status 3 when the browser or its driver is missing (the test skips).
"""
import sys


def main():
    args = sys.argv[1:]
    if not args:
        print(__doc__, file=sys.stderr)
        return 2
    page = args[0]
    options = {"--no-js": False, "--click": "button.cell", "--screenshot": "", "--width": "1000"}
    rest = args[1:]
    while rest:
        key = rest.pop(0)
        if key == "--no-js":
            options[key] = True
        elif key in options and rest:
            options[key] = rest.pop(0)
        else:
            print("probe_page.py: unknown argument " + key, file=sys.stderr)
            return 2

    import chromium
    driver = chromium.start("probe_page.py", int(options["--width"]), 1200, options["--no-js"])
    if driver is None:
        return 3
    import os
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys
    report = {}
    try:
        driver.get("file://" + os.path.abspath(page))
        report["title"] = driver.title
        buttons = driver.find_elements(By.CSS_SELECTOR, "button.cell")
        report["buttons"] = len(buttons)

        # the keyboard alone: Tab until a cell button has the focus, then Enter
        if buttons:
            driver.execute_script("window.scrollTo(0, 0); document.activeElement && document.activeElement.blur()")
            body = driver.find_element(By.TAG_NAME, "body")
            tabs = 0
            focused = None
            while tabs < 200:
                driver.switch_to.active_element.send_keys(Keys.TAB) if tabs else body.send_keys(Keys.TAB)
                tabs += 1
                active = driver.switch_to.active_element
                if active.tag_name == "button" and "cell" in (active.get_attribute("class") or ""):
                    focused = active
                    break
            keyboard = {"tabs": tabs, "label": "", "open": False, "text": "", "closed_by_escape": False}
            if focused is not None:
                keyboard["label"] = focused.get_attribute("aria-label") or ""
                focused.send_keys(Keys.ENTER)
                popover = driver.find_element(By.ID, focused.get_attribute("popovertarget"))
                keyboard["open"] = driver.execute_script("return arguments[0].matches(':popover-open')", popover)
                keyboard["text"] = popover.text
                driver.switch_to.active_element.send_keys(Keys.ESCAPE)
                keyboard["closed_by_escape"] = not driver.execute_script(
                    "return arguments[0].matches(':popover-open')", popover)
            report["keyboard"] = keyboard

        driver.get("file://" + os.path.abspath(page))
        # a click
        found = driver.find_elements(By.CSS_SELECTOR, options["--click"])
        if found:
            target = found[0]
            driver.execute_script("arguments[0].scrollIntoView({block: 'center'})", target)
            target.click()
            opens = target.get_attribute("popovertarget") or ""
            popover = driver.find_element(By.ID, opens) if opens else None
            report["click"] = {
                "label": target.get_attribute("aria-label") or target.text,
                "opens": opens,
                "open": bool(popover) and driver.execute_script("return arguments[0].matches(':popover-open')", popover),
                "text": popover.text if popover else "",
            }
            if target.tag_name == "summary":
                # a <summary> opens its <details>: what it folded is now shown
                details = target.find_element(By.XPATH, "..")
                report["click"]["open"] = details.get_attribute("open") is not None
                report["click"]["text"] = details.text
            if options["--screenshot"]:
                driver.save_screenshot(options["--screenshot"])
            if popover:
                driver.find_element(By.TAG_NAME, "body").send_keys(Keys.ESCAPE)

        report["text"] = driver.find_element(By.TAG_NAME, "body").text

        # print media
        driver.execute_cdp_cmd("Emulation.setEmulatedMedia", {"media": "print"})
        report["print"] = driver.execute_script("""
            const hidden = el => getComputedStyle(el).display === 'none';
            const popovers = [...document.querySelectorAll('[popover], .close')];
            const cells = [...document.querySelectorAll('button.cell')];
            return {popovers_hidden: popovers.every(hidden),
                    cells_plain: cells.every(c => getComputedStyle(c).textDecorationLine === 'none')};""")
        driver.execute_cdp_cmd("Emulation.setEmulatedMedia", {"media": ""})

        # a phone
        driver.set_window_size(390, 844)
        report["phone"] = driver.execute_script(
            "return {scroll_width: document.documentElement.scrollWidth, width: document.documentElement.clientWidth}")

    except BaseException:
        driver.quit()
        raise
    chromium.finish(driver, report)
    return 0


if __name__ == "__main__":
    sys.exit(main())

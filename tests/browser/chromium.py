"""Debian's Chromium, headless, under python3-selenium, for the probes of this
folder: start() gives the driver, or None when the browser, its driver or
Selenium is missing (the probe then exits with status 3 and the test skips);
finish() writes a probe's report with what every probe reports last."""
import json
import os
import sys


def start(name, width, height, no_js=False):
    try:
        from selenium import webdriver
        from selenium.webdriver.chrome.service import Service
    except ImportError:
        print(name + ": python3-selenium is not installed", file=sys.stderr)
        return None
    for path in ("/usr/bin/chromium", "/usr/bin/chromedriver"):
        if not os.path.exists(path):
            print(name + ": " + path + " is missing (packages chromium, chromium-driver)", file=sys.stderr)
            return None
    chrome = webdriver.ChromeOptions()
    chrome.binary_location = "/usr/bin/chromium"
    for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                 "--window-size=%d,%d" % (width, height)):
        chrome.add_argument(flag)
    # the console's messages, for the probes' reports
    chrome.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    if no_js:
        chrome.add_experimental_option("prefs", {"profile.managed_default_content_settings.javascript": 2})
    driver = webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=chrome)
    if width < 500:
        # a window is at least 500 px wide: a phone's screen is emulated instead
        driver.execute_cdp_cmd("Emulation.setDeviceMetricsOverride",
                               {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": True})
    return driver


def finish(driver, report):
    """Adds the URLs the page fetched and the console's errors to the report,
    closes the browser and writes the report to standard output as JSON."""
    try:
        report["fetched"] = driver.execute_script(
            "return performance.getEntriesByType('resource').map(e => e.name)")
        report["console"] = [entry["message"] for entry in driver.get_log("browser") if entry["level"] == "SEVERE"]
    finally:
        driver.quit()
    json.dump(report, sys.stdout, ensure_ascii=False)

"""Debian's Chromium, headless, under python3-selenium, for the probes of this
folder: start() gives the driver, or None when the browser, its driver or
Selenium is missing (the probe then exits with status 3 and the test skips)."""
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
    return webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=chrome)

"""Tests of the built book (make html-test, after a build): both sites, in a browser and
offline, the lab in a browser, the PDFs, the stated run times."""

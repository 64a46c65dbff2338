"""Tests over every chapter: each claim shown to fail where it is false (test_can_fail_NN.py,
with chapter_code.py), the ledger naming those tests, the house structure, and the student
edition run with the wrong answers of wrong_answers/."""

"""The book's tests, laid out like what they test: helpers/ (src/helpers), tools/ (tools/, by
package), book_ext/ (book/_ext), chapters/ (every chapter: can-fail tests, structure, student
edition), book/ (the built site and PDFs, after a build)."""

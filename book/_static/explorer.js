// Explorers and "Check yourself" questions on the static site: no kernel, no network.
// An explorer (helpers/explore.py) is a .book-explorer block holding range inputs and one
// picture per grid point (data-state="i,j"); moving a slider shows the matching picture. A
// question (book/_ext/quiz.py) is a .book-quiz block: its options become buttons; choosing one
// says whether it is right and opens the explanation. Without this script the explorer shows
// its first state and the question its explanation behind a "Show the answer" toggle.
(function () {
  "use strict";
  var zh = /^zh/i.test(document.documentElement.lang || "");

  function explorer(root) {
    var inputs = Array.prototype.slice.call(root.querySelectorAll("input[type=range]"));
    function update() {
      var key = inputs.map(function (i) { return i.value; }).join(",");
      root.querySelectorAll(".explorer-state").forEach(function (f) {
        f.hidden = f.getAttribute("data-state") !== key;
      });
      inputs.forEach(function (i) {
        var text = JSON.parse(i.getAttribute("data-values"))[+i.value];
        i.setAttribute("aria-valuetext", text);
        var out = root.querySelector('output[for="' + i.id + '"]');
        if (out) { out.textContent = text; }
      });
    }
    inputs.forEach(function (i) { i.addEventListener("input", update); });
    root.classList.add("explorer-ready");
    update();
  }

  function quiz(root) {
    var answer = root.getAttribute("data-answer");
    var details = root.querySelector("details.quiz-explanation");
    var verdict = root.querySelector(".quiz-verdict");
    var items = root.querySelectorAll(".quiz-options > li");
    items.forEach(function (li, n) {
      var button = document.createElement("button");
      button.type = "button";
      button.className = "quiz-option";
      button.setAttribute("aria-pressed", "false");
      while (li.firstChild) { button.appendChild(li.firstChild); }
      li.appendChild(button);
      button.addEventListener("click", function () {
        var right = String(n + 1) === answer;
        root.querySelectorAll(".quiz-option").forEach(function (b) {
          b.setAttribute("aria-pressed", "false");
          b.classList.remove("quiz-right", "quiz-wrong");
        });
        button.setAttribute("aria-pressed", "true");
        button.classList.add(right ? "quiz-right" : "quiz-wrong");
        verdict.textContent = right
          ? (zh ? "答对了。" : "Right.")
          : (zh ? "不对：正确答案是第 " + answer + " 项。" : "Not quite: the answer is option " + answer + ".");
        if (details) { details.open = true; }
      });
    });
    root.classList.add("quiz-ready");
  }

  function start() {
    document.querySelectorAll(".book-explorer").forEach(explorer);
    document.querySelectorAll(".book-quiz").forEach(quiz);
  }
  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", start);
  } else {
    start();
  }
})();

// GLUE source editor: the textarea stays the form field (it works without
// JavaScript); over a Prism-highlighted copy of its text, it is made
// transparent so the colours show through while the caret and selection
// stay native. Tab inserts a tab. Runs on each page htmx loads.
(function () {
  function init(root) {
    var areas = (root.querySelectorAll ? root : document).querySelectorAll('textarea[data-lang]');
    areas.forEach(function (ta) {
      if (ta.dataset.editor || !window.Prism) { return; }
      ta.dataset.editor = '1';
      var lang = ta.dataset.lang, grammar = Prism.languages[lang];
      if (!grammar) { return; }
      var wrap = document.createElement('div'), pre = document.createElement('pre'), code = document.createElement('code');
      wrap.className = 'code-editor';
      pre.setAttribute('aria-hidden', 'true');
      code.className = 'language-' + lang;
      pre.appendChild(code);
      ta.parentNode.insertBefore(wrap, ta);
      wrap.appendChild(pre);
      wrap.appendChild(ta);
      function paint() {
        // A trailing newline needs a character after it to be laid out.
        code.innerHTML = Prism.highlight(ta.value + '\n', grammar, lang);
        pre.scrollTop = ta.scrollTop;
        pre.scrollLeft = ta.scrollLeft;
      }
      ta.addEventListener('input', paint);
      ta.addEventListener('scroll', function () { pre.scrollTop = ta.scrollTop; pre.scrollLeft = ta.scrollLeft; });
      ta.addEventListener('keydown', function (e) {
        if (e.key !== 'Tab' || e.shiftKey || e.ctrlKey || e.metaKey || e.altKey) { return; }
        e.preventDefault();
        var s = ta.selectionStart;
        ta.setRangeText('\t', s, ta.selectionEnd, 'end');
        paint();
      });
      paint();
    });
  }
  if (window.htmx) { htmx.onLoad(init); } else { document.addEventListener('DOMContentLoaded', function () { init(document); }); }
})();

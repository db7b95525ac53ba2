// The console's page script. htmx swaps nothing when the server refuses
// an action (a 4xx or 5xx reply), so without this a failed Run once,
// Start or Delete would look like nothing happened: the reply's message
// (plain text, in the user's language) is shown next to the control that
// sent it. The rest: select-all for the bulk buttons, the cron builder,
// the job form's GLUE/NONE switches and the rolling log that follows its
// newest lines. Every page works without it.
(function () {
  'use strict';

  // errorBox returns the alert shown after the form (or control) of elt.
  function errorBox(elt) {
    var host = (elt && elt.closest && (elt.closest('form') || elt.closest('details') || elt)) || document.querySelector('main');
    var box = host.nextElementSibling;
    if (!box || !box.classList.contains('xhr-error')) {
      box = document.createElement('p');
      box.className = 'err xhr-error';
      box.setAttribute('role', 'alert');
      host.insertAdjacentElement('afterend', box);
    }
    return box;
  }

  document.addEventListener('htmx:responseError', function (e) {
    var xhr = e.detail.xhr, text = (xhr.responseText || '').trim();
    if (!text || /^\s*</.test(text)) { text = document.body.dataset.serverError + ' (' + xhr.status + ')'; }
    errorBox(e.detail.elt).textContent = text;
  });
  // A test call the admin refused (422) answers with the form's
  // problems as a fragment: shown in place, not as an error line.
  document.addEventListener('htmx:beforeSwap', function (e) {
    if (e.detail.xhr.status === 422 && e.detail.elt && e.detail.elt.id === 'test-call') {
      e.detail.shouldSwap = true;
      e.detail.isError = false;
    }
  });
  document.addEventListener('htmx:sendError', function (e) {
    errorBox(e.detail.elt).textContent = document.body.dataset.netError;
  });
  document.addEventListener('htmx:beforeRequest', function (e) {
    var host = e.detail.elt && e.detail.elt.closest && (e.detail.elt.closest('form') || e.detail.elt);
    var box = host && host.nextElementSibling;
    if (box && box.classList.contains('xhr-error')) { box.remove(); }
  });

  // Select all: the checkbox with data-select-all="form-id" ticks the
  // rows' checkboxes of that form.
  document.addEventListener('change', function (e) {
    var t = e.target, id = t.dataset && t.dataset.selectAll;
    if (id) {
      document.querySelectorAll('input[type=checkbox][name=id][form="' + id + '"]').forEach(function (c) {
        c.checked = t.checked;
      });
    }
    if (t.id === 'scheduleType' || t.id === 'glueType') { formSwitches(); }
  });

  // The job form: a NONE job has no schedule configuration to show; a
  // GLUE job runs its source, so its handler field is read-only.
  function formSwitches() {
    var st = document.getElementById('scheduleType'), gt = document.getElementById('glueType');
    var conf = document.querySelector('.jobform label.conf'), builder = document.getElementById('cron-builder');
    if (st && conf) {
      conf.hidden = st.value === 'NONE';
      if (builder) { builder.hidden = st.value !== 'CRON'; }
    }
    var handler = document.getElementById('executorHandler');
    if (gt && handler) {
      var glue = gt.value !== 'BEAN';
      handler.readOnly = glue;
      handler.title = glue ? handler.dataset.glueNote : '';
      if (glue) { handler.value = ''; }
    }
    var tgt = document.getElementById('http-target');
    if (gt && tgt) { tgt.hidden = gt.value !== 'HTTP'; }
    var aws = document.getElementById('aws-target'), tc = document.getElementById('test-call-row');
    if (gt && aws) { aws.hidden = gt.value !== 'AWS'; }
    if (gt && tc) { tc.hidden = gt.value !== 'HTTP' && gt.value !== 'AWS'; }
  }

  // The cron builder writes its expression into the schedule field and
  // fires "input", so the preview below shows the next fires in the
  // job's time zone as the expression is built.
  function cronExpr(root) {
    var parts = [], modes = [];
    root.querySelectorAll('[data-cron-mode]').forEach(function (sel) {
      var f = sel.dataset.cronMode, v = root.querySelector('[data-cron-value="' + f + '"]').value.trim() || '0';
      modes.push(sel.value);
      switch (sel.value) {
        case 'at': parts.push(v); break;
        case 'step': parts.push(v.indexOf('/') >= 0 ? v : '0/' + v); break;
        case 'any': parts.push('?'); break;
        default: parts.push('*');
      }
    });
    // Quartz wants exactly one of day-of-month and day-of-week to be '?'.
    // The one left on "every" gives way to the one that was set (a
    // weekday list such as MON-FRI is kept); when both were set, both
    // stay, and the preview says what is wrong rather than dropping one.
    var daySet = modes[3] === 'at' || modes[3] === 'step', weekSet = modes[5] === 'at' || modes[5] === 'step';
    if (parts[3] !== '?' && parts[5] !== '?') {
      if (weekSet && !daySet) { parts[3] = '?'; } else if (!weekSet) { parts[5] = '?'; }
    }
    if (parts[3] === '?' && parts[5] === '?') { parts[3] = '*'; }
    return parts.join(' ');
  }
  function applyCron(root) {
    var target = document.querySelector(root.dataset.cronBuilder);
    if (!target) { return; }
    target.value = cronExpr(root);
    target.dispatchEvent(new Event('input', { bubbles: true }));
  }
  document.addEventListener('input', function (e) {
    var root = e.target.closest && e.target.closest('[data-cron-builder]');
    if (root) { applyCron(root); }
  });
  document.addEventListener('change', function (e) {
    var root = e.target.closest && e.target.closest('[data-cron-builder]');
    if (root) { applyCron(root); }
  });
  document.addEventListener('click', function (e) {
    var root = e.target.closest && e.target.closest('[data-cron-apply]');
    if (root) { applyCron(root.closest('[data-cron-builder]')); }
  });

  // The rolling log keeps its newest lines in view, unless the reader
  // scrolled up to read older ones.
  var pinned = true;
  document.addEventListener('scroll', function (e) {
    var el = e.target;
    if (el && el.id === 'rolling') { pinned = el.scrollTop + el.clientHeight >= el.scrollHeight - 8; }
  }, true);
  document.addEventListener('htmx:afterSettle', function () {
    var el = document.getElementById('rolling');
    if (el && pinned) { el.scrollTop = el.scrollHeight; }
  });

  function init() { formSwitches(); pinned = true; }
  if (window.htmx) { htmx.onLoad(init); } else { document.addEventListener('DOMContentLoaded', init); }
})();

// The long texts of an item's page (_text.html): a Copy button for each, and a link to one
// (#attempt-2-error, from the attempts' table) opens it. An external file, as the dashboard's
// Content-Security-Policy allows no inline script. Without JavaScript the texts still open and
// can be selected; only the buttons stay hidden.
(function () {
  'use strict';

  function selectAndCopy(pre) {
    // Where the Clipboard API is missing (a page served over plain HTTP by another name than
    // localhost is not a secure context): select the text, and ask the browser to copy it.
    const range = document.createRange();
    range.selectNodeContents(pre);
    const selection = window.getSelection();
    selection.removeAllRanges();
    selection.addRange(range);
    try {
      return document.execCommand('copy');
    } catch (e) {
      return false;
    }
  }

  function said(button, text) {
    button.textContent = text;
    button.classList.toggle('copied', text === 'Copied');
    window.setTimeout(function () {
      button.textContent = 'Copy';
      button.classList.remove('copied');
    }, 2000);
  }

  function copy(button) {
    const pre = document.getElementById(button.dataset.copy);
    if (!pre) return;
    const text = pre.textContent;
    const fallback = function () {
      said(button, selectAndCopy(pre) ? 'Copied' : 'Selected: press Ctrl+C');
    };
    if (navigator.clipboard && window.isSecureContext) {
      navigator.clipboard.writeText(text).then(function () { said(button, 'Copied'); }, fallback);
    } else {
      fallback();
    }
  }

  function openTarget() {
    const id = decodeURIComponent(window.location.hash.slice(1));
    const target = id && document.getElementById(id);
    if (!target) return;
    const details = target.closest('details');
    if (details && !details.open) {
      details.open = true;
      target.scrollIntoView({block: 'start'});
    }
  }

  for (const button of document.querySelectorAll('button.copy[data-copy]')) {
    button.hidden = false;
    button.addEventListener('click', function () { copy(button); });
  }
  window.addEventListener('hashchange', openTarget);
  openTarget();
})();

// A little help when scripts run; every page works without it.
// A filter that changes submits its form (with scripts off, the Apply button does).
document.addEventListener("change", function (event) {
  var target = event.target;
  if (target && target.hasAttribute && target.hasAttribute("data-autosubmit") && target.form) {
    target.form.submit();
  }
});

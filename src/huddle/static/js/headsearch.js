// The header's search box: Enter opens the search page with the words typed.
import { typing } from "./common.js";

const box = document.getElementById("head-search");
if (box) {
  box.addEventListener("keydown", (ev) => {
    if (ev.key === "Enter" && box.value.trim()) location.href = `/search?q=${encodeURIComponent(box.value.trim())}`;
    else if (ev.key === "Escape") {
      box.value = "";
      box.blur();
    }
  });
  document.addEventListener("keydown", (ev) => {
    if (ev.key === "s" && !typing(ev.target) && !ev.ctrlKey && !ev.metaKey && !ev.altKey) {
      ev.preventDefault();
      box.focus();
    }
  });
}

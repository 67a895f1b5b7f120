import css from "./sendgate-editor.css";

/** The dialogs' styles, added to the editor's page once. */
export function addStyles(): void {
  if (document.getElementById("sendgate-editor-styles")) return;
  const style = document.createElement("style");
  style.id = "sendgate-editor-styles";
  style.textContent = css;
  document.head.appendChild(style);
}

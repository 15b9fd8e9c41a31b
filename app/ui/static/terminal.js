// corral's web UI, the exec terminal of an allocation page: Nomad's `alloc exec` over a
// WebSocket. A browser cannot set X-Nomad-Token on a WebSocket, so the socket is opened with
// ?ws_handshake=true and the token goes in the first frame, as Nomad's own UI does. The terminal
// is line based (no tty): each line typed is sent as stdin, stdout and stderr are shown as they
// come. xterm.js is not used: its renderer injects <style> elements, which the pages' strict
// Content-Security-Policy (style-src 'self') refuses.
import { h, token } from "./ui.js";

const $ = (id) => document.getElementById(id);
const KEEP = 256 * 1024; // characters of output kept on the page

const encodeText = (text) => btoa(String.fromCharCode(...new TextEncoder().encode(text)));
const bytesOf = (b64) => Uint8Array.from(atob(b64), (c) => c.charCodeAt(0));

export function execTerminal(allocId) {
  let ws = null;
  const screen = $("exec-screen");
  const status = $("exec-status");
  const decoders = { stdout: new TextDecoder(), stderr: new TextDecoder() };
  const write = (text, kind) => {
    screen.append(kind ? h("span", { class: kind }, text) : text);
    if (screen.textContent.length > KEEP) screen.textContent = screen.textContent.slice(-KEEP);
    screen.scrollTop = screen.scrollHeight;
  };
  const ended = (text) => {
    status.textContent = text;
    $("exec-connect").disabled = false;
    $("exec-input").disabled = true;
    $("exec-send").disabled = true;
    ws = null;
  };
  const receive = (event) => {
    let frame;
    try {
      frame = JSON.parse(event.data);
    } catch {
      return;
    }
    if (frame.exited) {
      ended(`Exited with code ${frame.result?.exit_code ?? "?"}.`);
      ws?.close(1000);
      return;
    }
    for (const stream of ["stdout", "stderr"]) {
      if (frame[stream]?.data) write(decoders[stream].decode(bytesOf(frame[stream].data), { stream: true }),
        stream === "stderr" ? "del" : "");
    }
  };
  const connect = () => {
    const task = $("exec-task").value;
    let command;
    try {
      command = JSON.stringify(["/bin/sh", "-c", $("exec-command").value.trim() || "/bin/sh"]);
    } catch {
      return;
    }
    const scheme = location.protocol === "https:" ? "wss" : "ws";
    const query = new URLSearchParams({ task, command, tty: "false", ws_handshake: "true" });
    screen.textContent = "";
    status.textContent = "Connecting…";
    $("exec-connect").disabled = true;
    ws = new WebSocket(`${scheme}://${location.host}/v1/client/allocation/${allocId}/exec?${query}`);
    ws.onopen = () => {
      ws.send(JSON.stringify({ version: 1, auth_token: token() }));
      status.textContent = `Connected to ${task}.`;
      $("exec-input").disabled = false;
      $("exec-send").disabled = false;
      $("exec-input").focus();
    };
    ws.onmessage = receive;
    ws.onclose = (event) => {
      if (!ws) return; // already ended by the exited frame
      const refused = event.code === 1008 || event.code === 1011;
      ended(refused ? `Refused: ${event.reason || "the session was closed"}` : "Disconnected.");
    };
  };
  $("exec-form").addEventListener("submit", (event) => {
    event.preventDefault();
    const input = $("exec-input");
    if (!ws || ws.readyState !== WebSocket.OPEN) return;
    ws.send(JSON.stringify({ stdin: { data: encodeText(`${input.value}\n`) } }));
    write(`${input.value}\n`, "add");
    input.value = "";
  });
  $("exec-connect").addEventListener("click", connect);
  $("exec-close").addEventListener("click", () => {
    if (ws) ws.send(JSON.stringify({ stdin: { close: true } }));
  });
  return {
    tasks(names) {
      const select = $("exec-task");
      if (select.options.length !== names.length) select.replaceChildren(...names.map((t) => h("option", {}, t)));
    },
    live(running) {
      $("exec-section").hidden = !running;
    },
  };
}

// A fake companion extension (js/labextension): answers the widget's kernel events
// (EVENTS.WATCH, EVENTS.INTERRUPT) on the document, as the real one does for the widget's own
// notebook, and lets a test change the kernel's status.
import { EVENTS } from "../shared/protocol.js";

/**
 * `status`: the kernel's status the host reports. `interrupt()` is what interrupting does
 * (resolves {ok, message}). `watchers` are the live watches; `interrupts` counts the requests.
 */
export function fakeHost(status = "idle", interrupt = async () => ({ ok: true, message: "" })) {
  const host = { status, watchers: [], interrupts: 0 };
  const onWatch = (event) => {
    event.preventDefault();
    const { onStatus } = event.detail;
    host.watchers.push(onStatus);
    event.detail.status = host.status;
    event.detail.unwatch = () => host.watchers.splice(host.watchers.indexOf(onStatus), 1);
  };
  const onInterrupt = (event) => {
    event.preventDefault();
    host.interrupts += 1;
    event.detail.result = interrupt();
  };
  document.addEventListener(EVENTS.WATCH, onWatch);
  document.addEventListener(EVENTS.INTERRUPT, onInterrupt);
  host.setStatus = (next) => {
    host.status = next;
    for (const onStatus of [...host.watchers]) onStatus(next);
  };
  host.remove = () => {
    document.removeEventListener(EVENTS.WATCH, onWatch);
    document.removeEventListener(EVENTS.INTERRUPT, onInterrupt);
  };
  return host;
}

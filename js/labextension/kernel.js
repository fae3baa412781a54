// The kernel of the notebook a widget sits in, for the widget's Cancel button and its kernel
// liveness (js/shared/protocol.js, EVENTS.INTERRUPT and EVENTS.WATCH). A main-area widget is a
// notebook panel when it has a sessionContext (duck-typed: no @jupyterlab import). Only the
// panel whose node holds the widget counts: interrupting or watching another notebook's kernel
// would act on the wrong kernel.

// The notebook panel whose DOM node contains `target`, or null.
export function panelOf(widgets, target) {
  if (!(target instanceof Node)) return null;
  return widgets.find((w) => w?.sessionContext && w.node?.contains(target)) ?? null;
}

function kernelOf(panel) {
  return panel.sessionContext.session?.kernel ?? null;
}

// The panel's kernel status: the host's word for it, or "none" when it has no kernel.
export function statusOf(panel) {
  return kernelOf(panel)?.status ?? "none";
}

// Interrupt the panel's kernel, as the toolbar's interrupt button does: a promise of
// {ok, message}.
export async function interrupt(panel) {
  const kernel = kernelOf(panel);
  if (!kernel) return { ok: false, message: "this notebook has no running kernel" };
  try {
    await kernel.interrupt();
    return { ok: true, message: "" };
  } catch (error) {
    return { ok: false, message: `the kernel could not be interrupted: ${error?.message ?? error}` };
  }
}

// Call onStatus(status) whenever the panel's kernel changes status, or is replaced ("changed")
// or shut down ("none"); returns the function that stops it.
export function watch(panel, onStatus) {
  const context = panel.sessionContext;
  const onStatusChanged = (_sender, status) => onStatus(status);
  const onKernelChanged = (_sender, change) => {
    const before = change?.oldValue?.id;
    const after = change?.newValue?.id;
    if (!after) onStatus("none");
    else if (before && before !== after) onStatus("changed");
  };
  context.statusChanged.connect(onStatusChanged);
  context.kernelChanged.connect(onKernelChanged);
  return () => {
    context.statusChanged.disconnect(onStatusChanged);
    context.kernelChanged.disconnect(onKernelChanged);
  };
}

import { Cell, ICodeCellModel } from '@jupyterlab/cells';

import { NotebookPanel } from '@jupyterlab/notebook';

/**
 * The DOM event a run card's stop button dispatches (jupyter_agent/ui/static/widget.js), next
 * to the `{type: "stop", run_id}` widget message it sends the kernel.
 */
export const STOP_EVENT = 'jupyter-agent-stop';

/**
 * Whether `cell` is executing or queued (JupyterLab 4.1+ keeps this on the model).
 */
function isRunning(cell: Cell): boolean {
  return (
    cell.model.type === 'code' &&
    (cell.model as ICodeCellModel).executionState === 'running'
  );
}

/** The pause between two interrupts of one stop, so the kernel handles them one by one. */
const INTERRUPT_GAP_MS = 300;

/** The most interrupts one stop sends (a batch's coordinator counts up to three). */
const MAX_INTERRUPTS = 3;

/**
 * How many interrupts the stop event asks for: `detail.interrupts` (a batch card sends 1 to let
 * running items finish, 2 to abort them; jupyter_agent/batch/coordinator.py counts them), else 1.
 */
function interruptCount(event: Event): number {
  const detail = (event as CustomEvent).detail as { interrupts?: unknown } | null | undefined;
  const n = detail?.interrupts;
  if (typeof n !== 'number' || !Number.isInteger(n) || n < 1) {
    return 1;
  }
  return Math.min(n, MAX_INTERRUPTS);
}

/** Interrupt `kernel` up to `times` times, INTERRUPT_GAP_MS apart, while `live()` holds. */
async function interruptTimes(
  kernel: { interrupt(): Promise<void> },
  times: number,
  live: () => boolean
): Promise<void> {
  for (let i = 0; i < times; i++) {
    if (i > 0) {
      await new Promise(resolve => setTimeout(resolve, INTERRUPT_GAP_MS));
      if (!live()) {
        return;
      }
    }
    try {
      await kernel.interrupt();
    } catch (reason) {
      console.warn('jupyter-agent: could not interrupt the kernel to stop the run', reason);
      return;
    }
  }
}

/**
 * Interrupt the kernel when a run card in `panel` asks to stop, if that run is what the kernel
 * is busy with.
 *
 * The widget message alone can come too late: a kernel reads widget messages only between
 * cells, so a stop sent while the run's cell executes would wait for the run to end. An
 * interrupt ends the run at once, as Ctrl-C would (status "aborted", what it did so far kept).
 * Only the run the kernel is busy with is interrupted: the card's own cell is executing (a
 * queued cell has no output yet, so a running card in a running cell is the live one), or no
 * cell executes and the kernel is busy (a run resumed by a click on an ask). Anything else, a
 * stale card or another cell's run, is left alone. A batch card's stop asks for one or two
 * interrupts (`detail.interrupts`); they go ~300 ms apart, all under the same conditions.
 */
export function interruptOnStop(panel: NotebookPanel): void {
  const onStop = (event: Event): void => {
    const target = event.target instanceof Node ? event.target : null;
    const cells = panel.content.widgets;
    const owner = target ? cells.find(cell => cell.node.contains(target)) : undefined;
    const kernel = panel.sessionContext.session?.kernel;
    if (!owner || !kernel) {
      return;
    }
    // Checked again before each interrupt: once the first has ended the batch, the kernel may
    // be running the next cell, which a late second interrupt must not hit.
    const live = (): boolean =>
      isRunning(owner) || (kernel.status === 'busy' && !cells.some(isRunning));
    if (live()) {
      void interruptTimes(kernel, interruptCount(event), live);
    }
  };
  panel.node.addEventListener(STOP_EVENT, onStop);
  panel.disposed.connect(() => panel.node.removeEventListener(STOP_EVENT, onStop));
}

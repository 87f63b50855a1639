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
 * stale card or another cell's run, is left alone.
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
    const resumed = kernel.status === 'busy' && !cells.some(isRunning);
    if (isRunning(owner) || resumed) {
      void kernel.interrupt().catch(reason => {
        console.warn('jupyter-agent: could not interrupt the kernel to stop the run', reason);
      });
    }
  };
  panel.node.addEventListener(STOP_EVENT, onStop);
  panel.disposed.connect(() => panel.node.removeEventListener(STOP_EVENT, onStop));
}

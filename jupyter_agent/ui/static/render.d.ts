// Types of render.js, for TypeScript users (the JupyterLab extension imports render.js).

/** A message the renderer sends when the user answers an ask or an approval. */
export interface AnswerMessage {
  type: 'answer';
  call_id: string;
  how: 'option' | 'other' | 'dismissed';
  /** 1-based index of the chosen option when `how` is "option", else null. */
  option_index: number | null;
  answer: string;
}

/**
 * A message the renderer sends when the user presses the stop button of a running run: end
 * it as a kernel interrupt would (see widget.js).
 */
export interface StopMessage {
  type: 'stop';
  run_id: string;
}

/** Options of a render: live mode when `onAction` is given, static otherwise. */
export interface RenderOptions {
  onAction?: (msg: AnswerMessage | StopMessage) => void;
}

/** A run's view state as reduced by jupyter_agent/view/reduce.py (plain JSON). */
export type RunView = { [key: string]: any };

/** Draw `view` into `el`, replacing whatever `el` held. */
export function renderRun(el: HTMLElement, view: RunView, opts?: RenderOptions): void;

/** Draw `view` into `el` again, keeping unchanged nodes and the user's UI state. */
export function renderRunInto(el: HTMLElement, view: RunView, opts?: RenderOptions): void;

/** Stop the ticker of a live view drawn into `el` and forget its state. */
export function disposeRun(el: HTMLElement): void;

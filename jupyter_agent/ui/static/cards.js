// The one module every live card runs: the run card and the batch card. The kernel sends it
// once, as the `code` of one shared widget model (jupyter_agent/ui/shared.py); each card's own
// `_esm` is the small ./loader.js, which imports this module from there. A saved notebook thus
// carries the cards' code once, not once per card.

import { RUN_CARD } from "./widget.js";
import { BATCH_CARD } from "./batch.js";

export default { run: RUN_CARD, batch: BATCH_CARD };

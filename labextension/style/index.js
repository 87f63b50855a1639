import '../../jupyter_agent/ui/static/run.css';
import '../../jupyter_agent/ui/static/code.css';
import '../../jupyter_agent/ui/static/batch.css';

import '../../jupyter_agent/ui/static/run.css';

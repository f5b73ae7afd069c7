"""Report: what a person reads. text (terminal tables), plot (figures for papers, from run folders)."""

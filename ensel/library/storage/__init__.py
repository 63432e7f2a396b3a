"""What a build leaves behind: the resumable prediction store on disk, the ``Library`` that reads
it, the ``FittedMembers`` that predict new rows, and libraries repeated over several fold sets."""

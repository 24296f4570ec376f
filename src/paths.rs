//! Path safety: the only way any tool touches the file system under a root.

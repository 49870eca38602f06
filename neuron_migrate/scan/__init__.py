"""Static detection: discover files, decode them, analyse them with stdlib `ast`, cache results."""

"""Raw ``openssl enc`` ciphers: AES, DES, 3DES, Blowfish and RC4 in ECB, CBC and CTR,
byte-identical to ``openssl enc``, on every core wherever the mode allows (CBC encryption and
RC4 run in order).

``key=`` and ``iv=`` are bytes (``openssl enc -K -iv``), or ``password=`` reads and writes
openssl's ``Salted__`` password files (``openssl enc -pbkdf2``; ``pbkdf2=False`` reads files of
the legacy derivation, never writes them). Raw output has no integrity protection, and legacy
ciphers and ECB raise a :class:`paracrypt.LegacyWarning`: prefer :func:`paracrypt.encrypt`.

>>> from paracrypt import raw
>>> sealed = raw.encrypt(b"x" * 100, cipher="aes-128-ctr", key=bytes(16), iv=bytes(16))
>>> raw.decrypt(sealed, cipher="aes-128-ctr", key=bytes(16), iv=bytes(16)) == b"x" * 100
True
"""

from paracrypt._paracrypt import raw_decrypt as decrypt
from paracrypt._paracrypt import raw_decrypt_file as decrypt_file
from paracrypt._paracrypt import raw_decryptor as decryptor
from paracrypt._paracrypt import raw_encrypt as encrypt
from paracrypt._paracrypt import raw_encrypt_file as encrypt_file
from paracrypt._paracrypt import raw_encryptor as encryptor

__all__ = ["decrypt", "decrypt_file", "decryptor", "encrypt", "encrypt_file", "encryptor"]

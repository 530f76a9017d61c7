package tlsconf

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/des"
	"crypto/pbkdf2"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/x509"
	"encoding/asn1"
	"encoding/pem"
	"errors"
	"fmt"
	"hash"
)

// decryptKey returns keyPEM with its private key decrypted with pass:
// PKCS#8 "ENCRYPTED PRIVATE KEY" (PBES2 with PBKDF2 and AES-CBC or
// DES-EDE3-CBC, what `openssl genrsa -aes256` or `openssl pkcs8 -topk8`
// write) or OpenSSL's legacy encrypted PEM (Proc-Type: 4,ENCRYPTED). An
// unencrypted key is returned as it is; an encrypted one without pass,
// or with a wrong one, is an error.
func decryptKey(keyPEM []byte, pass string) ([]byte, error) {
	blk, _ := pem.Decode(keyPEM)
	if blk == nil {
		return keyPEM, nil // tls.X509KeyPair reports it
	}
	switch {
	case blk.Type == "ENCRYPTED PRIVATE KEY":
		if pass == "" {
			return nil, errors.New("the key is encrypted and tls-key-file-pass is not set")
		}
		der, err := decryptPKCS8(blk.Bytes, pass)
		if err != nil {
			return nil, err
		}
		if _, err := x509.ParsePKCS8PrivateKey(der); err != nil {
			return nil, errors.New("bad decrypt (wrong password?)")
		}
		return pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), nil
	case x509.IsEncryptedPEMBlock(blk): //nolint:staticcheck // OpenSSL's legacy format, still written by some tools
		if pass == "" {
			return nil, errors.New("the key is encrypted and tls-key-file-pass is not set")
		}
		der, err := x509.DecryptPEMBlock(blk, []byte(pass)) //nolint:staticcheck // as above
		if err != nil {
			return nil, fmt.Errorf("bad decrypt (wrong password?): %w", err)
		}
		return pem.EncodeToMemory(&pem.Block{Type: blk.Type, Bytes: der}), nil
	}
	return keyPEM, nil
}

var (
	oidPBES2      = asn1.ObjectIdentifier{1, 2, 840, 113549, 1, 5, 13}
	oidPBKDF2     = asn1.ObjectIdentifier{1, 2, 840, 113549, 1, 5, 12}
	oidHMACSHA1   = asn1.ObjectIdentifier{1, 2, 840, 113549, 2, 7}
	oidHMACSHA256 = asn1.ObjectIdentifier{1, 2, 840, 113549, 2, 9}
	oidAES128CBC  = asn1.ObjectIdentifier{2, 16, 840, 1, 101, 3, 4, 1, 2}
	oidAES192CBC  = asn1.ObjectIdentifier{2, 16, 840, 1, 101, 3, 4, 1, 22}
	oidAES256CBC  = asn1.ObjectIdentifier{2, 16, 840, 1, 101, 3, 4, 1, 42}
	oidDESEDE3CBC = asn1.ObjectIdentifier{1, 2, 840, 113549, 3, 7}
)

type algorithm struct {
	OID    asn1.ObjectIdentifier
	Params asn1.RawValue `asn1:"optional"`
}

type encryptedKeyInfo struct {
	Algo algorithm
	Data []byte
}

type pbes2Params struct {
	KDF    algorithm
	Scheme algorithm
}

type pbkdf2Params struct {
	Salt      []byte
	Iter      int
	KeyLength int       `asn1:"optional"`
	PRF       algorithm `asn1:"optional"`
}

// decryptPKCS8 decrypts an EncryptedPrivateKeyInfo (RFC 5208, PBES2 of
// RFC 8018) into the PKCS#8 PrivateKeyInfo it holds.
func decryptPKCS8(der []byte, pass string) ([]byte, error) {
	var info encryptedKeyInfo
	if _, err := asn1.Unmarshal(der, &info); err != nil {
		return nil, fmt.Errorf("encrypted key: %w", err)
	}
	if !info.Algo.OID.Equal(oidPBES2) {
		return nil, fmt.Errorf("encrypted key: unsupported scheme %v (PBES2 only)", info.Algo.OID)
	}
	var p pbes2Params
	if _, err := asn1.Unmarshal(info.Algo.Params.FullBytes, &p); err != nil {
		return nil, fmt.Errorf("encrypted key: PBES2 parameters: %w", err)
	}
	if !p.KDF.OID.Equal(oidPBKDF2) {
		return nil, fmt.Errorf("encrypted key: unsupported key derivation %v (PBKDF2 only)", p.KDF.OID)
	}
	var kp pbkdf2Params
	if _, err := asn1.Unmarshal(p.KDF.Params.FullBytes, &kp); err != nil {
		return nil, fmt.Errorf("encrypted key: PBKDF2 parameters: %w", err)
	}
	var prf func() hash.Hash
	switch {
	case kp.PRF.OID == nil || kp.PRF.OID.Equal(oidHMACSHA1):
		prf = sha1.New
	case kp.PRF.OID.Equal(oidHMACSHA256):
		prf = sha256.New
	default:
		return nil, fmt.Errorf("encrypted key: unsupported PRF %v", kp.PRF.OID)
	}
	var keyLen int
	var newCipher func([]byte) (cipher.Block, error)
	switch {
	case p.Scheme.OID.Equal(oidAES128CBC):
		keyLen, newCipher = 16, aes.NewCipher
	case p.Scheme.OID.Equal(oidAES192CBC):
		keyLen, newCipher = 24, aes.NewCipher
	case p.Scheme.OID.Equal(oidAES256CBC):
		keyLen, newCipher = 32, aes.NewCipher
	case p.Scheme.OID.Equal(oidDESEDE3CBC):
		keyLen, newCipher = 24, des.NewTripleDESCipher
	default:
		return nil, fmt.Errorf("encrypted key: unsupported cipher %v", p.Scheme.OID)
	}
	var iv []byte
	if _, err := asn1.Unmarshal(p.Scheme.Params.FullBytes, &iv); err != nil {
		return nil, fmt.Errorf("encrypted key: IV: %w", err)
	}
	key, err := pbkdf2.Key(prf, pass, kp.Salt, kp.Iter, keyLen)
	if err != nil {
		return nil, fmt.Errorf("encrypted key: %w", err)
	}
	block, err := newCipher(key)
	if err != nil {
		return nil, err
	}
	bs := block.BlockSize()
	if len(iv) != bs || len(info.Data) == 0 || len(info.Data)%bs != 0 {
		return nil, errors.New("encrypted key: bad IV or data length")
	}
	out := make([]byte, len(info.Data))
	cipher.NewCBCDecrypter(block, iv).CryptBlocks(out, info.Data)
	pad := int(out[len(out)-1])
	if pad == 0 || pad > bs {
		return nil, errors.New("bad decrypt (wrong password?)")
	}
	for _, b := range out[len(out)-pad:] {
		if int(b) != pad {
			return nil, errors.New("bad decrypt (wrong password?)")
		}
	}
	return out[:len(out)-pad], nil
}

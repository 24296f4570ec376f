//! Content hashes: the identity of a claim's text (seed §1.z).
//!
//! The text is normalised the way the reference implementation does it, so a hash computed
//! by a pce-memory client matches ours: NFC, CRLF to LF, trimmed, every run of whitespace
//! collapsed to one space, then SHA-256 as `sha256:<64 hex>`. "Whitespace" is
//! JavaScript's `\s` (which includes U+FEFF and excludes U+0085), not Rust's
//! `char::is_whitespace`: the two differ, and the reference is JavaScript.

use sha2::{Digest, Sha256};
use unicode_normalization::UnicodeNormalization;

/// JavaScript's `\s` and `String.prototype.trim` set: WhiteSpace and LineTerminator.
fn is_js_whitespace(c: char) -> bool {
    matches!(
        c,
        '\t' | '\n' | '\u{0B}' | '\u{0C}' | '\r' | ' ' | '\u{A0}' | '\u{1680}' | '\u{2000}'
            ..='\u{200A}'
                | '\u{2028}'
                | '\u{2029}'
                | '\u{202F}'
                | '\u{205F}'
                | '\u{3000}'
                | '\u{FEFF}'
    )
}

/// The text a content hash is computed over.
pub(crate) fn normalize_for_hash(text: &str) -> String {
    let composed: String = text.nfc().collect::<String>().replace("\r\n", "\n");
    let mut out = String::with_capacity(composed.len());
    let mut pending_space = false;
    for c in composed.trim_matches(is_js_whitespace).chars() {
        if is_js_whitespace(c) {
            pending_space = true;
            continue;
        }
        if pending_space {
            out.push(' ');
            pending_space = false;
        }
        out.push(c);
    }
    out
}

/// Lowercase hexadecimal of `bytes`.
pub(crate) fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// SHA-256 of `bytes` as 64 lowercase hex digits.
pub(crate) fn sha256_hex(bytes: &[u8]) -> String {
    hex(&Sha256::digest(bytes))
}

/// `sha256:<hex>` of the normalised text.
pub(crate) fn content_hash(text: &str) -> String {
    format!("sha256:{}", sha256_hex(normalize_for_hash(text).as_bytes()))
}

/// HMAC-SHA256 (RFC 2104) of `message` under `key`, hex: what a policy signature is.
pub(crate) fn hmac_sha256_hex(key: &[u8], message: &[u8]) -> String {
    const BLOCK: usize = 64;
    let mut block_key = [0u8; BLOCK];
    if key.len() > BLOCK {
        block_key[..32].copy_from_slice(&Sha256::digest(key));
    } else {
        block_key[..key.len()].copy_from_slice(key);
    }
    let pad = |byte: u8| block_key.map(|k| k ^ byte);
    let inner = Sha256::new()
        .chain_update(pad(0x36))
        .chain_update(message)
        .finalize();
    let outer = Sha256::new()
        .chain_update(pad(0x5c))
        .chain_update(inner)
        .finalize();
    hex(&outer)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn normalises_like_the_reference() {
        assert_eq!(normalize_for_hash("  a\r\n\r\nb\t c  "), "a b c");
        // U+FEFF is whitespace to JavaScript, U+0085 is not.
        assert_eq!(normalize_for_hash("\u{FEFF}x\u{FEFF}y"), "x y");
        assert_eq!(normalize_for_hash("x\u{85}y"), "x\u{85}y");
        // NFC: a decomposed が becomes the composed one.
        assert_eq!(normalize_for_hash("か\u{3099}"), "が");
        assert_eq!(normalize_for_hash("全角\u{3000}空白"), "全角 空白");
    }

    /// Pinned against the reference's JavaScript (`text.normalize('NFC')
    /// .replace(/\r\n/g,'\n').trim().replace(/\s+/g,' ')`, then SHA-256), run with node.
    #[test]
    fn hashes_match_the_reference() {
        assert_eq!(
            content_hash("Stripe webhookは10分ドリフトを許容"),
            "sha256:0a19e6df4ea35b303d26e1829b0f641e175df4c691a05b0f3fec6071ac8988a9"
        );
        assert_eq!(
            content_hash("\u{FEFF}  a\r\nb\u{3000}c\u{2028}d "),
            "sha256:f82ce1b653e30b1ceb5711bbf75965dd24513011d7daa48bbd8610550154a1fd"
        );
        assert_eq!(
            content_hash(" POST /subscriptions/{id}/cancel\r\n は\u{3000}非同期 "),
            content_hash("POST /subscriptions/{id}/cancel は 非同期")
        );
    }

    /// RFC 4231 test case 2.
    #[test]
    fn hmac_matches_rfc_4231() {
        assert_eq!(
            hmac_sha256_hex(b"Jefe", b"what do ya want for nothing?"),
            "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"
        );
        let long_key = [0xaa_u8; 131];
        assert_eq!(
            hmac_sha256_hex(
                &long_key,
                b"Test Using Larger Than Block-Size Key - Hash Key First"
            ),
            "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54"
        );
    }
}

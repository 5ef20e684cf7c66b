//! The pieces of an output line: JSON strings and lists, and numbers in
//! decimal. They append bytes to a reused line buffer without going through
//! `fmt`, so writing a result costs no allocation and little time.

/// `items` between `open` and `close`, separated by commas.
pub(super) fn push_list<T>(
    line: &mut Vec<u8>,
    open: u8,
    close: u8,
    items: &[T],
    mut push_item: impl FnMut(&mut Vec<u8>, &T),
) {
    line.push(open);
    for (position, item) in items.iter().enumerate() {
        if position > 0 {
            line.push(b',');
        }
        push_item(line, item);
    }
    line.push(close);
}

/// `text` as a JSON string, escaped where JSON requires it.
pub(super) fn push_json_string(line: &mut Vec<u8>, text: &str) {
    line.push(b'"');
    if text.bytes().any(needs_escape) {
        for byte in text.bytes() {
            match byte {
                b'"' => line.extend_from_slice(b"\\\""),
                b'\\' => line.extend_from_slice(b"\\\\"),
                0..0x20 => {
                    line.extend_from_slice(b"\\u00");
                    line.push(HEX_DIGITS[usize::from(byte >> 4)]);
                    line.push(HEX_DIGITS[usize::from(byte & 0xf)]);
                }
                _ => line.push(byte),
            }
        }
    } else {
        line.extend_from_slice(text.as_bytes());
    }
    line.push(b'"');
}

fn needs_escape(byte: u8) -> bool {
    byte == b'"' || byte == b'\\' || byte < 0x20
}

const HEX_DIGITS: &[u8; 16] = b"0123456789abcdef";

/// `value` in decimal, without going through `fmt`.
pub(super) fn push_uint(line: &mut Vec<u8>, mut value: u64) {
    let mut digits = [0u8; 20];
    let mut start = digits.len();
    loop {
        start -= 1;
        digits[start] = b'0' + (value % 10) as u8;
        value /= 10;
        if value == 0 {
            break;
        }
    }
    line.extend_from_slice(&digits[start..]);
}

/// `value` in decimal, zero-padded to `width` digits.
pub(super) fn push_padded(line: &mut Vec<u8>, value: usize, width: usize) {
    let padding = width.saturating_sub(decimal_digits(value));
    line.resize(line.len() + padding, b'0');
    push_uint(line, value as u64);
}

/// A fixed-point `units` with `decimals` digits after the point: (41_2, 1)
/// is `41.2`.
pub(super) fn push_fixed(line: &mut Vec<u8>, units: u32, decimals: u32) {
    let scale = 10u32.pow(decimals);
    push_uint(line, u64::from(units / scale));
    line.push(b'.');
    push_padded(line, (units % scale) as usize, decimals as usize);
}

/// How many digits `value` has in decimal.
pub(super) fn decimal_digits(value: usize) -> usize {
    value.checked_ilog10().map_or(1, |log| log as usize + 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_are_written_without_fmt() {
        let written = |push: &dyn Fn(&mut Vec<u8>)| {
            let mut line = Vec::new();
            push(&mut line);
            String::from_utf8(line).unwrap()
        };
        assert_eq!(written(&|line| push_uint(line, 0)), "0");
        assert_eq!(
            written(&|line| push_uint(line, u64::MAX)),
            u64::MAX.to_string()
        );
        assert_eq!(written(&|line| push_padded(line, 7, 4)), "0007");
        assert_eq!(written(&|line| push_padded(line, 12345, 4)), "12345");
        assert_eq!(written(&|line| push_fixed(line, 412, 1)), "41.2");
        assert_eq!(written(&|line| push_fixed(line, 5, 4)), "0.0005");
        assert_eq!(written(&|line| push_fixed(line, 124_817, 4)), "12.4817");
        assert_eq!(
            written(&|line| push_json_string(line, "a\"b\\c\n")),
            r#""a\"b\\c\u000a""#
        );
        assert_eq!(decimal_digits(0), 1);
        assert_eq!(decimal_digits(1_000_000), 7);
    }
}

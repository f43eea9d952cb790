//! Protobuf wire-format reading: what every decoder level uses.

/// The record is not on the fast path; the Python decoder takes it.
#[derive(Debug)]
pub(crate) struct Fallback;

pub(crate) type Res<T> = Result<T, Fallback>;

pub(crate) const WT_VARINT: u8 = 0;
pub(crate) const WT_I64: u8 = 1;
pub(crate) const WT_LEN: u8 = 2;

/// A protobuf wire-format reader over one message's bytes.
pub(crate) struct Reader<'a> {
    pub(crate) buf: &'a [u8],
    pub(crate) pos: usize,
}

impl<'a> Reader<'a> {
    pub(crate) fn new(buf: &'a [u8]) -> Self {
        Reader { buf, pos: 0 }
    }

    #[inline]
    pub(crate) fn done(&self) -> bool {
        self.pos >= self.buf.len()
    }

    #[inline]
    pub(crate) fn varint(&mut self) -> Res<u64> {
        let mut result: u64 = 0;
        let mut shift = 0u32;
        loop {
            let byte = *self.buf.get(self.pos).ok_or(Fallback)?;
            self.pos += 1;
            if shift == 63 && byte > 1 {
                return Err(Fallback); // more than 64 bits
            }
            result |= u64::from(byte & 0x7f) << shift;
            if byte < 0x80 {
                return Ok(result);
            }
            shift += 7;
            if shift > 63 {
                return Err(Fallback);
            }
        }
    }

    #[inline]
    pub(crate) fn tag(&mut self) -> Res<(u64, u8)> {
        let key = self.varint()?;
        let field = key >> 3;
        if field == 0 {
            return Err(Fallback);
        }
        Ok((field, (key & 7) as u8))
    }

    #[inline]
    pub(crate) fn fixed64(&mut self) -> Res<u64> {
        let end = self.pos.checked_add(8).ok_or(Fallback)?;
        let bytes = self.buf.get(self.pos..end).ok_or(Fallback)?;
        self.pos = end;
        Ok(u64::from_le_bytes(bytes.try_into().map_err(|_| Fallback)?))
    }

    #[inline]
    pub(crate) fn len_delimited(&mut self) -> Res<&'a [u8]> {
        let len = usize::try_from(self.varint()?).map_err(|_| Fallback)?;
        let end = self.pos.checked_add(len).ok_or(Fallback)?;
        let bytes = self.buf.get(self.pos..end).ok_or(Fallback)?;
        self.pos = end;
        Ok(bytes)
    }

    #[inline]
    pub(crate) fn utf8(&mut self) -> Res<&'a str> {
        std::str::from_utf8(self.len_delimited()?).map_err(|_| Fallback)
    }
}

#[inline]
pub(crate) fn expect(wire_type: u8, wanted: u8) -> Res<()> {
    if wire_type == wanted {
        Ok(())
    } else {
        Err(Fallback) // a known field with the wrong wire type is an unknown field to protobuf
    }
}

//! Thrift's compact protocol, the part Parquet's page headers and footer use.

const CT_TRUE: u8 = 1;
const CT_FALSE: u8 = 2;
pub(super) const CT_I32: u8 = 5;
const CT_I64: u8 = 6;
pub(super) const CT_BINARY: u8 = 8;
const CT_LIST: u8 = 9;
pub(super) const CT_STRUCT: u8 = 12;

pub(super) struct Thrift {
    pub(super) out: Vec<u8>,
    stack: Vec<i16>,
    last: i16,
}

impl Thrift {
    pub(super) fn new() -> Self {
        Thrift {
            out: Vec::new(),
            stack: Vec::new(),
            last: 0,
        }
    }
    pub(super) fn varint(&mut self, mut v: u64) {
        while v >= 0x80 {
            self.out.push((v as u8) | 0x80);
            v >>= 7;
        }
        self.out.push(v as u8);
    }
    pub(super) fn zigzag(v: i64) -> u64 {
        ((v << 1) ^ (v >> 63)) as u64
    }
    pub(super) fn field(&mut self, id: i16, ty: u8) {
        let delta = id - self.last;
        if delta > 0 && delta <= 15 {
            self.out.push(((delta as u8) << 4) | ty);
        } else {
            self.out.push(ty);
            self.varint(Self::zigzag(id as i64));
        }
        self.last = id;
    }
    pub(super) fn i32(&mut self, id: i16, v: i32) {
        self.field(id, CT_I32);
        self.varint(Self::zigzag(v as i64));
    }
    pub(super) fn i64(&mut self, id: i16, v: i64) {
        self.field(id, CT_I64);
        self.varint(Self::zigzag(v));
    }
    pub(super) fn bool(&mut self, id: i16, v: bool) {
        self.field(id, if v { CT_TRUE } else { CT_FALSE });
    }
    pub(super) fn binary(&mut self, id: i16, bytes: &[u8]) {
        self.field(id, CT_BINARY);
        self.varint(bytes.len() as u64);
        self.out.extend_from_slice(bytes);
    }
    pub(super) fn begin(&mut self, id: i16) {
        self.field(id, CT_STRUCT);
        self.stack.push(self.last);
        self.last = 0;
    }
    /// A struct as a list element.
    pub(super) fn begin_element(&mut self) {
        self.stack.push(self.last);
        self.last = 0;
    }
    pub(super) fn end(&mut self) {
        self.out.push(0);
        self.last = self.stack.pop().unwrap_or(0);
    }
    pub(super) fn list(&mut self, id: i16, element: u8, size: usize) {
        self.field(id, CT_LIST);
        if size < 15 {
            self.out.push(((size as u8) << 4) | element);
        } else {
            self.out.push(0xF0 | element);
            self.varint(size as u64);
        }
    }
    pub(super) fn element_i32(&mut self, v: i32) {
        self.varint(Self::zigzag(v as i64));
    }
    pub(super) fn element_binary(&mut self, bytes: &[u8]) {
        self.varint(bytes.len() as u64);
        self.out.extend_from_slice(bytes);
    }
}

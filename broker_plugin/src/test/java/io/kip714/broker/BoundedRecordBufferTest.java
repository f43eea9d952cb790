package io.kip714.broker;

import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

class BoundedRecordBufferTest {
    record Sized(int sizeInBytes) implements BoundedRecordBuffer.Sized {
    }

    @Test
    void refusesPastTheRecordBound() throws Exception {
        BoundedRecordBuffer buffer = new BoundedRecordBuffer(2, 1_000);
        assertTrue(buffer.offer(new Sized(10)));
        assertTrue(buffer.offer(new Sized(10)));
        assertFalse(buffer.offer(new Sized(10)));
        assertEquals(2, buffer.records());
        assertEquals(20, buffer.bytes());
        buffer.poll(0);
        assertTrue(buffer.offer(new Sized(10)));
    }

    @Test
    void refusesPastTheByteBoundAndKeepsAccountingExact() throws Exception {
        BoundedRecordBuffer buffer = new BoundedRecordBuffer(100, 25);
        Sized first = new Sized(20);
        assertTrue(buffer.offer(first));
        assertFalse(buffer.offer(new Sized(6)));
        assertEquals(20, buffer.bytes());
        assertTrue(buffer.offer(new Sized(5)));
        assertSame(first, buffer.poll(0));
        assertEquals(5, buffer.bytes());
        buffer.poll(0);
        assertNull(buffer.poll(0));
        assertEquals(0, buffer.bytes());
    }

    @Test
    void rejectsNonPositiveBounds() {
        assertThrows(IllegalArgumentException.class, () -> new BoundedRecordBuffer(0, 10));
        assertThrows(IllegalArgumentException.class, () -> new BoundedRecordBuffer(10, 0));
    }
}

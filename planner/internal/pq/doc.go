// Package pq is a binary heap of values ordered by a less function, without
// container/heap's interface boxing: pushing and popping allocate nothing
// once the backing slice has grown.
package pq

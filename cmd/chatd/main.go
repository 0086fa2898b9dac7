// Command chatd serves the chatd HTTP API.
package main

func main() {}
